#!/bin/sh
# The roofline table in one command: DRAM bandwidth, then decode tok/s and the share of the
# bandwidth ceiling for stories15M, stories110M, TinyLlama-1.1B, SmolLM2-360M, Qwen2.5-0.5B,
# Qwen3-0.6B and Llama-3.2-1B shapes in Q8_0 and Q4_0 at 1 and 2 threads, with this CPU's best build (or the
# preset given); then the cost of sampling over each vocabulary against a decode step
# (`ml_bench sample`: 151936 entries for Qwen2.5 and Qwen3, 128256 for Llama 3.2).
#   tools/roofline.sh [PRESET] [SHAPE...]     e.g. tools/roofline.sh avx512vnni qwen2.5-0.5b
# Models: random weights of those shapes (tools/gen_random.py, default panel layout), written to
# build/bench-models/ on first use (~7 GB for all seven). As root it runs pinned to cores 0,1 at raised priority.
set -eu
cd "$(dirname "$0")/.."
mkdir -p build/bench-models
c++ -std=c++17 -O1 -I. -DML_ISA_ID=scalar simd/cpu_guard.cc native/isa_probe.cc -o build/ml_isa_probe
preset=${1:-$(build/ml_isa_probe | tr _ -)}
[ $# -gt 0 ] && shift
shapes=${*:-stories15m stories110m tinyllama smollm2-360m qwen2.5-0.5b qwen3-0.6b llama3.2-1b}
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" --target ml_bench >/dev/null
models=""
for shape in $shapes; do
  for w in q8_0 q4_0; do
    f=build/bench-models/${shape}_${w}_panel16.mlb
    [ -f "$f" ] || /usr/bin/python3 tools/gen_random.py "$f" --preset "$shape" --wtype "$w" --layout panel16 -q
    models="$models $f"
  done
done
echo "roofline: $preset build" >&2
pinned() {
  if [ "$(id -u)" -eq 0 ]; then
    setsid -w sh -c "echo -20 > /proc/\$\$/autogroup; exec nice -n -20 taskset -c 0,1 $*"
  else
    "$@"
  fi
}
pinned "build/$preset/ml_bench" roofline $models -t 1,2
echo
pinned "build/$preset/ml_bench" sample $models -t 1 -n 32
