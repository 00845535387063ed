#!/bin/sh
# wasm.threads (cmake/tests/wasm.cmake): wasm/threads_test.js in headless Chromium, with
# playwright-core installed into <build>/npm (wasm/playwright_npm.sh).
#   sh threads_test.sh SRC BUILD GGUF [--bench MODEL.mlb...]
set -eu
src=$1 build=$2 gguf=$3
shift 3
sh "$src/wasm/playwright_npm.sh" "$src" "$build"
npm_dir="$build/npm"
NODE_PATH="$npm_dir/node_modules" exec node "$src/wasm/threads_test.js" --www "$build/www" --gguf "$gguf" "$@"
