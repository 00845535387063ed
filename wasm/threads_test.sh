#!/bin/sh
# wasm.threads (cmake/tests/wasm.cmake): wasm/threads_test.js in headless Chromium, with
# playwright-core installed into <build>/npm from wasm/package-lock.json as wasm/browser_test.sh does.
#   sh threads_test.sh SRC BUILD GGUF [--bench MODEL.mlb...]
set -eu
src=$1 build=$2 gguf=$3
shift 3
npm_dir="$build/npm"
if ! cmp -s "$src/wasm/package-lock.json" "$npm_dir/package-lock.json" ||
   [ ! -f "$npm_dir/node_modules/playwright-core/package.json" ]; then
  echo "threads_test.sh: installing playwright-core into $npm_dir (npm ci)"
  mkdir -p "$npm_dir"
  cp "$src/wasm/package.json" "$src/wasm/package-lock.json" "$npm_dir/"
  (cd "$npm_dir" && npm ci --no-audit --no-fund --loglevel=error)
fi
NODE_PATH="$npm_dir/node_modules" exec node "$src/wasm/threads_test.js" --www "$build/www" --gguf "$gguf" "$@"
