#!/bin/sh
# playwright-core for the Chromium tests (wasm.browser, wasm.npm, server.page): wasm/package.json and
# package-lock.json copied into BUILD_DIR/npm and `npm ci` there, when that folder does not already
# hold this lock file's install — never into the source tree, never `npx playwright install`
# (Debian's Chromium is used). Fails naming a missing Chromium (ML_CHROMIUM, default /usr/bin/chromium).
#   playwright_npm.sh SOURCE_DIR BUILD_DIR [LOCK_DIR SUBDIR MODULE]
# The optional three install another lock file the same way (wasm/bench/side_by_side.sh: LOCK_DIR's
# package files into BUILD_DIR/SUBDIR, MODULE the package whose presence says it is installed).
set -eu
src=$1 lock_dir=${3:-$1/wasm} npm_dir=$2/${4:-npm} module=${5:-playwright-core}
[ -x "${ML_CHROMIUM:-/usr/bin/chromium}" ] || { echo "${ML_CHROMIUM:-/usr/bin/chromium} is missing (tools/setup.sh --all)"; exit 1; }
if ! cmp -s "$lock_dir/package-lock.json" "$npm_dir/package-lock.json" ||
   [ ! -f "$npm_dir/node_modules/$module/package.json" ]; then
  echo "installing $module into $npm_dir (npm ci)"
  mkdir -p "$npm_dir"
  cp "$lock_dir/package.json" "$lock_dir/package-lock.json" "$npm_dir/"
  (cd "$npm_dir" && npm ci --no-audit --no-fund --loglevel=error)
fi
