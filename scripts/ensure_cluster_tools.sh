#!/usr/bin/env bash
# `make test-cluster` (tests/cluster/) runs a small fleet on this machine from Debian's packages:
# etcd + Patroni over PostgreSQL (Debian's server and client: a fresh machine may have neither), PgBouncer,
# Redis Sentinel, and setpriv (util-linux) to run them as postgres. Install them once.
# Best effort like scripts/ensure_promtool.sh: without them (offline, not root, no apt) the cluster
# test skips saying why; this script never fails make test. policy-rc.d keeps the packages from
# starting their own services: the test starts private instances on free ports.
set -uo pipefail
PACKAGES=(patroni etcd-server pgbouncer redis-sentinel redis-server openssl postgresql postgresql-client util-linux)
have_all() {
  command -v patroni >/dev/null 2>&1 && command -v pgbouncer >/dev/null 2>&1 && command -v redis-sentinel >/dev/null 2>&1 \
    && command -v openssl >/dev/null 2>&1 && command -v redis-server >/dev/null 2>&1 \
    && command -v psql >/dev/null 2>&1 && command -v setpriv >/dev/null 2>&1 && ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 \
    && { command -v etcd >/dev/null 2>&1 || [ -x /usr/bin/etcd ]; }
}
if have_all; then exit 0; fi
missing() {
  echo "[nexo] cluster tools missing ($1); the cluster test will skip. Install Debian's ${PACKAGES[*]}." >&2
  exit 0
}
[ "$(id -u)" = 0 ] || missing "not root"
command -v apt-get >/dev/null 2>&1 || missing "no apt-get"
echo "[nexo] installing Debian's ${PACKAGES[*]} for the cluster test"
timeout 300 apt-get update -qq >/dev/null 2>&1 || missing "apt-get update failed: offline?"
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy"
  trap 'rm -f "$policy"' EXIT
fi
DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null 2>&1 \
  || missing "apt-get install failed"
have_all || missing "a package did not install its program"
