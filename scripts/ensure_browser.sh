#!/usr/bin/env bash
# The browser tests drive Debian's Chromium (no browser download from a test tool). Install it once.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
if [ "$(id -u)" != 0 ]; then
  echo "[nexo] /usr/bin/chromium is missing; install it (apt-get install chromium) for the browser tests" >&2
  exit 0
fi
echo "[nexo] installing Debian's chromium for the browser tests"
apt-get update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
