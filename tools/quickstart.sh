#!/bin/sh
# The newcomer's first command: install what is missing, build the best ISA preset for this CPU,
# convert a model and generate text.
#   tools/quickstart.sh [PROMPT]
#   tools/quickstart.sh --hf ORG/REPO[:QUANT] [PROMPT]
# The model: stories260K from the shared data folder (ML_SHARED, default ../shared next to this
# checkout); without it, models/stories15M.bin + models/tokenizer.bin (the script says how to get them).
# With --hf (a network needed): that GGUF from the Hugging Face hub (docs/hub.md), downloaded into
# the cache once; with PROMPT it continues the prompt, without one it chats (ml_run --chat).
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)
hf=
if [ "${1:-}" = --hf ]; then
  [ $# -ge 2 ] || { echo "quickstart: --hf needs ORG/REPO[:QUANT]" >&2; exit 6; }
  hf=$2
  shift 2
fi
prompt=${1:-Once upon a time}
tools/setup.sh

# 1. The best build for this CPU, from the ISA table (simd/isa_table.h) and the CPU guard's detection.
mkdir -p build
c++ -std=c++17 -O1 -I. -DML_ISA_ID=scalar simd/cpu_guard.cc native/isa_probe.cc -o build/ml_isa_probe
isa=$(build/ml_isa_probe)
preset=$(echo "$isa" | tr _ -)
echo "quickstart: this CPU's best build is $isa" >&2
if [ "$(uname -m)" = x86_64 ]; then
  cmake --preset "$preset" >/dev/null && cmake --build --preset "$preset"
  bin="build/$preset"
else  # on ARM / RISC-V hosts build natively (the presets there are cross builds for CI)
  cmake -S . -B "build/native-$preset" -G Ninja -DCMAKE_BUILD_TYPE=Release -DML_ISA="$isa" -DML_TESTS=OFF >/dev/null
  cmake --build "build/native-$preset"
  bin="build/native-$preset"
fi

# 2. A model: by name from the hub, or the shared one.
if [ -n "$hf" ]; then
  if [ $# -ge 1 ]; then exec "$bin/ml_run" --hf "$hf" -n 256 -i "$prompt"; fi
  exec "$bin/ml_run" --hf "$hf" --chat
fi
shared=${ML_SHARED:-$root/../shared}
mkdir -p models
if [ -f "$shared/models/stories260K/stories260K.bin" ]; then
  src="$shared/models/stories260K/stories260K.bin"
  tok="$shared/models/stories260K/tok512.bin"
  out=models/stories260K_q8_0.mlb
elif [ -f models/stories15M.bin ] && [ -f models/tokenizer.bin ]; then
  src=models/stories15M.bin
  tok=models/tokenizer.bin
  out=models/stories15M_q8_0.mlb
else
  cat >&2 <<MSG
quickstart: no model found. The shared folder ($shared) is absent, so get llama2.c's stories15M:
    curl -L -o models/stories15M.bin https://huggingface.co/karpathy/tinyllamas/resolve/main/stories15M.bin
    curl -L -o models/tokenizer.bin https://github.com/karpathy/llama2.c/raw/master/tokenizer.bin
then run tools/quickstart.sh again (it converts models/stories15M.bin to .mlb and generates).
MSG
  exit 1
fi
[ -f "$out" ] || /usr/bin/python3 tools/convert.py "$src" "$out" --wtype q8_0

# 3. Generate.
"$bin/ml_run" "$out" -z "$tok" -n 256 --temp 0.8 --top-p 0.9 -i "$prompt"
