#!/bin/sh
# playwright-core for the Chromium tests (wasm.browser, wasm.npm, server.page): wasm/package.json and
# package-lock.json copied into BUILD_DIR/npm and `npm ci` there, when that folder does not already
# hold this lock file's install — never into the source tree, never `npx playwright install`
# (Debian's Chromium is used). Fails naming a missing Chromium (ML_CHROMIUM, default /usr/bin/chromium).
#   playwright_npm.sh SOURCE_DIR BUILD_DIR
set -eu
src=$1 npm_dir=$2/npm
[ -x "${ML_CHROMIUM:-/usr/bin/chromium}" ] || { echo "${ML_CHROMIUM:-/usr/bin/chromium} is missing (tools/setup.sh --all)"; exit 1; }
if ! cmp -s "$src/wasm/package-lock.json" "$npm_dir/package-lock.json" ||
   [ ! -f "$npm_dir/node_modules/playwright-core/package.json" ]; then
  echo "installing playwright-core into $npm_dir (npm ci)"
  mkdir -p "$npm_dir"
  cp "$src/wasm/package.json" "$src/wasm/package-lock.json" "$npm_dir/"
  (cd "$npm_dir" && npm ci --no-audit --no-fund --loglevel=error)
fi
