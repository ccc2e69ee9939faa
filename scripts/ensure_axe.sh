#!/usr/bin/env bash
# The accessibility test (tests/e2e/test_every_page_in_a_browser.py) injects axe-core into every page. This installs
# the pinned version once, with npm, into a cache outside the repository, and prints the path of axe.min.js on its
# last line; the test runs it to find the file. When it cannot (no npm, offline, another tarball) it says why and
# exits 1: the test then fails with that message as root or in CI (an accessibility gate never skips there).
set -euo pipefail
AXE_CORE_VERSION=4.14.1
# The registry's sha512 of that tarball (`npm view axe-core@4.14.1 dist.integrity`): pinned like requirements-dev.txt.
AXE_CORE_INTEGRITY=sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ==
dir="${NEXO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/nexo}/axe-core-$AXE_CORE_VERSION"
axe="$dir/node_modules/axe-core/axe.min.js"
if [ -f "$axe" ]; then
  echo "$axe"
  exit 0
fi
fail() {
  echo "[nexo] axe-core $AXE_CORE_VERSION could not be installed ($1); the accessibility test needs it: run" \
    "scripts/ensure_axe.sh where npm reaches its registry" >&2
  exit 1
}
command -v npm >/dev/null 2>&1 || fail "npm is missing: install Debian's npm"
echo "[nexo] installing axe-core $AXE_CORE_VERSION (npm) for the accessibility test" >&2
mkdir -p "$(dirname "$dir")" || fail "cannot create $(dirname "$dir")"
# Installed aside, then moved in whole: a run that stops half-way, or two worktrees at once, never leave half a copy.
staging=$(mktemp -d "$dir.XXXXXX")
trap 'rm -rf "$staging"' EXIT
timeout 300 npm install --no-save --no-audit --no-fund --ignore-scripts --loglevel=error --prefix "$staging" \
  "axe-core@$AXE_CORE_VERSION" >&2 || fail "npm install failed: offline?"
grep -qF "\"integrity\": \"$AXE_CORE_INTEGRITY\"" "$staging/node_modules/.package-lock.json" \
  || fail "the registry's tarball is not the pinned one"
mv -T "$staging" "$dir" 2>/dev/null || [ -f "$axe" ] || fail "cannot move it into $dir"
[ -f "$axe" ] || fail "the package has no axe.min.js"
echo "$axe"
