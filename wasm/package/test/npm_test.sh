#!/bin/sh
# CTest's wasm.npm (cmake/tests/wasm.cmake, wasm-simd128 only): the npm package as a user gets it.
#   npm_test.sh SOURCE_DIR BUILD_DIR SHARED_DIR NATIVE_SCALAR_DIR
# 1. builds the target npm_package (npm pack: BUILD_DIR/package/legacy-ml-<version>.tgz);
# 2. installs the tarball into an empty folder with `npm install --offline`;
# 3. type-checks a consumer (consumer.ts) against the installed declarations with tsc --strict
#    --noEmit (typescript from tools/npm), and checks that a wrong use (consumer_bad.ts) fails;
# 4. node: node_test.mjs with the installed package;
# 5. Chromium: browser_test.mjs serves the folder and opens page.html, which imports the installed
#    package (the engine in its Worker); then again from wasm/serve.mjs (COOP/COEP): the threaded build.
# Needs node, npm, python3 with numpy (ML_PYTHON), /usr/bin/chromium and playwright-core (installed
# into BUILD_DIR/npm by wasm/playwright_npm.sh when missing), and NATIVE_SCALAR_DIR/ml_run
# (built with the scalar preset when missing, as wasm.browser does).
set -eu
src=$1 build=$2 shared=$3 native=$4
t0=$(date +%s)
say() { echo "npm_test.sh: [$(($(date +%s) - t0)) s] $*"; }
py=${ML_PYTHON:-python3}

if [ ! -x "$native/ml_run" ]; then
  [ "$native" = "$src/build/scalar" ] || { say "$native/ml_run is missing"; exit 1; }
  [ -f "$native/build.ninja" ] || (cd "$src" && cmake --preset scalar >/dev/null)
  cmake --build "$native" --target ml_run -j 2 >/dev/null
fi
sh "$src/wasm/playwright_npm.sh" "$src" "$build"
npm_dir="$build/npm"

say "npm pack (target npm_package)"
cmake --build "$build" --target npm_package >/dev/null
version=$(node -p "require('$build/package/legacy-ml/package.json').version")
tgz="$build/package/legacy-ml-$version.tgz"
[ -f "$tgz" ] || { say "$tgz was not made"; exit 1; }
tar -tzf "$tgz" | sort | sed 's/^/  /'

app="$build/package/consumer"
rm -rf "$app"
mkdir -p "$app"
echo '{"name": "consumer", "private": true, "type": "module"}' > "$app/package.json"
(cd "$app" && npm install --offline --no-audit --no-fund --loglevel=error "$tgz")
for f in ml_web_scalar.wasm ml_web_simd128_threads.wasm ml_web_simd128_threads.worker.js loader.js; do
  [ -f "$app/node_modules/legacy-ml/$f" ] || { say "the installed package lacks $f"; exit 1; }
done

say "tsc --strict --noEmit"
tsc="$src/tools/npm/node_modules/typescript/bin/tsc"
[ -f "$tsc" ] || { say "$tsc is missing (tools/npm: npm ci)"; exit 1; }
cp "$src/wasm/package/test/consumer.ts" "$src/wasm/package/test/consumer_bad.ts" "$app/"
tscopts="--strict --noEmit --target es2022 --module nodenext --moduleResolution nodenext --lib es2022,dom"
# One tsc run over both: errors exactly on consumer_bad.ts's ERROR lines, none in consumer.ts.
(cd "$app" && node "$tsc" $tscopts consumer.ts consumer_bad.ts > tsc.log 2>&1) && { say "FAIL tsc accepts consumer_bad.ts"; exit 1; }
got=$(sed -n 's/^\(consumer[a-z_]*\.ts\)(\([0-9]*\),.*error TS.*/\1:\2/p' "$app/tsc.log" | tr '\n' ' ')
want=$(grep -n '// ERROR' "$app/consumer_bad.ts" | cut -d: -f1 | sed 's/^/consumer_bad.ts:/' | tr '\n' ' ')
[ "$got" = "$want" ] || { cat "$app/tsc.log"; say "FAIL tsc errors at '$got', expected at '$want' (consumer.ts clean, consumer_bad.ts on its ERROR lines)"; exit 1; }
say "ok   consumer.ts type-checks; consumer_bad.ts is rejected on exactly its ERROR lines ($want)"

# A stories15M-shape random model (llama2.c's tokenizer) for the memory and long-task checks.
"$py" "$src/tools/gen_random.py" "$app/stories15m_q4_0.mlb" --preset stories15m --wtype q4_0 --seq 512 --seed 5 -q
cp "$shared/models/llama2-tokenizer/tokenizer.bin" "$app/tokenizer.bin"

say "node"
(cd "$app" && cp "$src/wasm/package/test/node_test.mjs" . &&
 node --expose-gc node_test.mjs "$shared" stories15m_q4_0.mlb tokenizer.bin "$native/ml_run")

say "Chromium"
cp "$src/wasm/package/test/page.html" "$src/wasm/package/test/page.js" "$src/wasm/package/test/burn.js" "$shared/models/stories260K/stories260K.gguf" "$app/"
NODE_PATH="$npm_dir/node_modules" node "$src/wasm/package/test/browser_test.mjs" --dir "$app" --out "$build" \
  --ml-run "$native/ml_run"
