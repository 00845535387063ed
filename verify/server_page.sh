#!/bin/sh
# CTest's server.page (cmake/Tests.cmake): playwright-core into BUILD_DIR/npm (wasm/playwright_npm.sh),
# then verify/server_page.js.
#   server_page.sh SOURCE_DIR BUILD_DIR
set -eu
src=$1 build=$2
sh "$src/wasm/playwright_npm.sh" "$src" "$build"
npm_dir="$build/npm"
ML_OUT="$build/server_page" exec node "$src/verify/server_page.js" "$npm_dir"
