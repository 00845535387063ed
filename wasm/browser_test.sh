#!/bin/sh
# CTest's wasm.browser (cmake/tests/wasm.cmake): gets what the browser test needs, then runs it.
#   browser_test.sh SOURCE_DIR BUILD_DIR VARIANT NATIVE_SCALAR_DIR [WASM_SCALAR_DIR WASM_THREADS_DIR]
# VARIANT is this build's module (simd128 or scalar). Needs node, npm, python3, /usr/bin/chromium
# (tools/setup.sh --all), and ML_PYTHON (set by CTest: Python 3 with numpy; default python3).
# What it prepares, each only when missing:
#   - playwright-core in BUILD_DIR/npm (wasm/playwright_npm.sh);
#   - the native scalar ml_run the demo's text is compared with (NATIVE_SCALAR_DIR, normally
#     build/scalar, which CI builds first): configured and built with the `scalar` preset if absent;
#   - for the simd128 build, the scalar module (WASM_SCALAR_DIR, normally build/wasm-scalar, built
#     first by CI) that browsers without SIMD get: built with the `wasm-scalar` preset if absent,
#     then copied into this build's www/ (target www); likewise the threaded module (WASM_THREADS_DIR,
#     normally build/wasm-simd128-threads, built first by CI: the `wasm-simd128-threads` preset's
#     ml_web), which the test runs on cross-origin-isolated pages (--threads-too);
#   - always (small, deterministic): www/models/random_bpe_q8_0.mlb (tools/gen_random.py, vocab 320)
#     and www/models/bpe315.mltk (fuzz/data/encode_tokenizer.mltk, a 315-token byte-level BPE file)
#     for the demo case with an MLTK tokenizer.
set -eu
src=$1 build=$2 variant=$3 native=$4 wasm_scalar=${5:-} wasm_threads=${6:-}
say() { echo "browser_test.sh: $*"; }
for tool in node npm python3; do
  command -v "$tool" >/dev/null || { say "$tool is missing (tools/setup.sh --all)"; exit 1; }
done
sh "$src/wasm/playwright_npm.sh" "$src" "$build"
npm_dir="$build/npm"

# Builds one target of a sibling preset's folder, configuring it first if it never was.
build_sibling() {  # preset dir target
  if [ ! -f "$2/build.ninja" ]; then
    say "configuring the $1 preset into $2"
    (cd "$src" && cmake --preset "$1" >/dev/null)
  fi
  say "building $3 in $2"
  cmake --build "$2" --target "$3" -j 2 >/dev/null
}
if [ ! -x "$native/ml_run" ]; then
  [ "$native" = "$src/build/scalar" ] || { say "$native/ml_run is missing"; exit 1; }
  build_sibling scalar "$native" ml_run
fi
say "native reference: $native/ml_run"

expect=$variant scalar_too="" threads_too=""
if [ "$variant" = simd128 ]; then
  scalar_too=--scalar-too threads_too=--threads-too
  if [ ! -f "$wasm_scalar/ml_web_scalar.mjs" ]; then
    [ -n "$wasm_scalar" ] || { say "no wasm-scalar build folder given"; exit 1; }
    build_sibling wasm-scalar "$wasm_scalar" ml_web
  fi
  if [ ! -f "$wasm_threads/ml_web_simd128_threads.worker.js" ]; then
    [ -n "$wasm_threads" ] || { say "no wasm-simd128-threads build folder given"; exit 1; }
    build_sibling wasm-simd128-threads "$wasm_threads" ml_web
  fi
  cmake --build "$build" --target www >/dev/null  # copies the scalar and threaded modules into www/
fi
models="$build/www/models"
mkdir -p "$models"
"${ML_PYTHON:-python3}" "$src/tools/gen_random.py" "$models/random_bpe_q8_0.mlb" --dim 64 --hidden 128 --layers 2 --heads 4 \
  --kv-heads 2 --vocab 320 --seq 128 --seed 11 --wtype q8_0 --layout rows -q
cp "$src/fuzz/data/encode_tokenizer.mltk" "$models/bpe315.mltk"
NODE_PATH="$npm_dir/node_modules" exec node "$src/wasm/browser_test.js" --www "$build/www" \
  --ml-run "$native/ml_run" --out "$build" --expect "$expect" $scalar_too $threads_too
