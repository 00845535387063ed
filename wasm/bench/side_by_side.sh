#!/bin/sh
# By hand, not in CI: legacy-ml's npm package against @wllama/wllama 3.8.1 (llama.cpp in WebAssembly,
# pinned by this folder's package-lock.json) in this machine's headless Chromium, on the same
# random-weight GGUF files, 1 and 2 threads: 64-token prompt tok/s, decode tok/s and wasm memory,
# one markdown row per cell with ours / wllama (docs/bench.md, "legacy-ml against wllama").
#   sh wasm/bench/side_by_side.sh [--quick] [--models LIST] [--threads 1,2] [--engines legacy-ml,wllama]
#        [--rounds 3] [--tokens 64] [--prompt-tokens 64] [--ctx N] [--kv f32|f16|q8_0] [--source url|file]
#        [--package TGZ] [--build DIR] [--work DIR] [--json OUT.jsonl]
# --models: a comma list of stories110m_q8_0, stories110m_q4_0, tinyllama_q8_0, tinyllama_q4_0 (the
#   default: all four; --quick: the two stories110m ones). Each is made once into WORK/models by
#   tools/export.py (random:stories110m / random:tinyllama, seed 0, the llama2 tokenizer embedded as
#   GGUF 'llama' metadata, which llama.cpp reads).
# --ctx: the context both engines open (legacy-ml max_seq, wllama n_ctx); default: the model's
#   (1024 for stories110M, 2048 for TinyLlama).
# --kv: legacy-ml's KV cache elements (createEngine kv_cache; default f32, the reference's bits;
#   wllama runs llama.cpp's default, F16).
# --source: how each engine gets the file: url (default; createEngine({model: url}),
#   Wllama.loadModelFromUrl) or file (a File the page fetched, to createEngine / Wllama.loadModel).
# --package: the npm package tarball; default BUILD/package/legacy-ml-*.tgz, made by the target
#   npm_package of BUILD (default build/wasm-simd128, which needs the wasm-scalar and
#   wasm-simd128-threads builds' ml_web: docs/bench.md says the commands).
# WORK (default build/bench-wllama) gets: npm/ (playwright-core, wasm/playwright_npm.sh),
# npm-wllama/ (`npm ci` of this folder's lock file, by the same script), models/, www/ (the served folder).
# Needs node, npm (registry only for the first npm ci), /usr/bin/chromium, /usr/bin/python3 with numpy.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
work=$src/build/bench-wllama build=$src/build/wasm-simd128 pkg= models= quick=0
pass=
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1; shift ;;
    --models) models=$2; shift 2 ;;
    --package) pkg=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --threads|--engines|--rounds|--tokens|--prompt-tokens|--ctx|--kv|--source|--json) [ $# -ge 2 ] || { echo "side_by_side.sh: $1 needs a value"; exit 2; }
      pass="$pass $1 $2"; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "side_by_side.sh: unknown option $1 (--help)"; exit 2 ;;
  esac
done
[ -n "$models" ] || { [ $quick = 1 ] && models=stories110m_q8_0,stories110m_q4_0 || models=stories110m_q8_0,stories110m_q4_0,tinyllama_q8_0,tinyllama_q4_0; }
for m in $(echo "$models" | tr ',' ' '); do
  case $m in
    stories110m_q8_0|stories110m_q4_0|tinyllama_q8_0|tinyllama_q4_0) ;;
    *) echo "side_by_side.sh: --models: $m is not one of stories110m_q8_0, stories110m_q4_0, tinyllama_q8_0, tinyllama_q4_0"; exit 2 ;;
  esac
done
py=${ML_PYTHON:-/usr/bin/python3}
t0=$(date +%s)
say() { echo "side_by_side.sh: [$(($(date +%s) - t0)) s] $*" >&2; }
mkdir -p "$work/models"
work=$(cd "$work" && pwd)

# playwright-core, as the Chromium tests get it; @wllama/wllama from this folder's lock file.
sh "$src/wasm/playwright_npm.sh" "$src" "$work" >&2
sh "$src/wasm/playwright_npm.sh" "$src" "$work" "$here" npm-wllama @wllama/wllama >&2

# The GGUF files.
list=
for m in $(echo "$models" | tr ',' ' '); do
  if [ ! -f "$work/models/$m.gguf" ]; then
    say "writing $work/models/$m.gguf (tools/export.py random:${m%_q*} --dtype ${m#*_})"
    "$py" "$src/tools/export.py" "random:${m%_q*}" "$work/models/$m.gguf" --format gguf --dtype "${m#*_}" \
      --tokenizer "$src/../shared/models/llama2-tokenizer/tokenizer.bin" >&2
  fi
  case $m in stories110m_*) ctx=1024 ;; *) ctx=2048 ;; esac  # the presets' context (gen_random.py)
  list="$list${list:+,}$m=models/$m.gguf=$ctx"
done

# The package, installed as a user installs it.
if [ -z "$pkg" ]; then
  pkg=$(ls "$build"/package/legacy-ml-*.tgz 2>/dev/null | head -n 1 || true)
  if [ -z "$pkg" ]; then
    [ -f "$build/build.ninja" ] || { echo "side_by_side.sh: no package tarball in $build/package and no build there (--package TGZ, or build the wasm presets: docs/bench.md)"; exit 1; }
    say "npm pack (target npm_package of $build)"
    cmake --build "$build" --target npm_package >&2
    pkg=$(ls "$build"/package/legacy-ml-*.tgz | head -n 1)
  fi
fi
pkg=$(cd "$(dirname "$pkg")" && pwd)/$(basename "$pkg")
say "package $pkg"
www=$work/www
rm -rf "$www" && mkdir -p "$www"
cp "$here/bench.html" "$here/bench.js" "$here/memhook.js" "$www/"
echo '{"name": "legacy-ml-bench-page", "private": true, "type": "module"}' > "$www/package.json"
(cd "$www" && npm install --offline --no-audit --no-fund --loglevel=error "$pkg") >&2
ln -s "$work/npm-wllama/node_modules/@wllama/wllama" "$www/wllama"
ln -s "$work/models" "$www/models"

say "Chromium: $models"
# shellcheck disable=SC2086
NODE_PATH="$work/npm/node_modules" node "$here/side_by_side.mjs" --www "$www" --models "$list" $pass
say "done"
