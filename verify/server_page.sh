#!/bin/sh
# CTest's server.page (cmake/Tests.cmake): playwright-core into BUILD_DIR/npm (wasm/package.json and
# package-lock.json, `npm ci`, as wasm/browser_test.sh does; never into the source tree, never
# `npx playwright install`: Debian's Chromium is used), then verify/server_page.js.
#   server_page.sh SOURCE_DIR BUILD_DIR
set -eu
src=$1 build=$2
[ -x "${ML_CHROMIUM:-/usr/bin/chromium}" ] || { echo "server_page.sh: ${ML_CHROMIUM:-/usr/bin/chromium} is missing (tools/setup.sh --all)"; exit 1; }
npm_dir="$build/npm"
if ! cmp -s "$src/wasm/package-lock.json" "$npm_dir/package-lock.json" ||
   [ ! -f "$npm_dir/node_modules/playwright-core/package.json" ]; then
  echo "server_page.sh: installing playwright-core into $npm_dir (npm ci)"
  mkdir -p "$npm_dir"
  cp "$src/wasm/package.json" "$src/wasm/package-lock.json" "$npm_dir/"
  (cd "$npm_dir" && npm ci --no-audit --no-fund --loglevel=error)
fi
ML_OUT="$build/server_page" exec node "$src/verify/server_page.js" "$npm_dir"
