#!/usr/bin/env bash
# The alert-rule tests run Debian's promtool (package prometheus) on deploy/prometheus/. Install it once.
set -euo pipefail
if command -v promtool >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" != 0 ]; then
  echo "[nexo] promtool is missing; install it (apt-get install prometheus) for the alert-rule tests" >&2
  exit 0
fi
echo "[nexo] installing Debian's prometheus (for promtool) for the alert-rule tests"
apt-get update -qq >/dev/null
# Only the promtool binary is needed: policy-rc.d keeps the package from starting its server.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy"
  trap 'rm -f "$policy"' EXIT
fi
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
