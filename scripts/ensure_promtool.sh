#!/usr/bin/env bash
# The alert-rule tests run Debian's promtool (package prometheus) on deploy/prometheus/. Install it once.
# Best effort: without it (offline, not root, no such package) make test still runs, and the promtool
# test skips saying why (tests/integration/test_alert_rules.py). This script never fails make test.
set -uo pipefail
if command -v promtool >/dev/null 2>&1; then exit 0; fi
missing() {
  echo "[nexo] promtool is missing ($1); the alert-rule test will skip. Install Debian's prometheus for it." >&2
  exit 0
}
[ "$(id -u)" = 0 ] || missing "not root"
command -v apt-get >/dev/null 2>&1 || missing "no apt-get"
echo "[nexo] installing Debian's prometheus (for promtool) for the alert-rule tests"
timeout 300 apt-get update -qq >/dev/null 2>&1 || missing "apt-get update failed: offline?"
# Only the promtool binary is needed: policy-rc.d keeps the package from starting its server.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy"
  trap 'rm -f "$policy"' EXIT
fi
DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -qq --no-install-recommends prometheus >/dev/null 2>&1 \
  || missing "apt-get install prometheus failed"
command -v promtool >/dev/null 2>&1 || missing "the package has no promtool"
