#!/bin/sh
# Builds and tests every preset (cmake --workflow --preset <p>), one line per preset at the end.
#   tools/test_matrix.sh              every workflow preset (what CI runs); first installs what is
#                                     missing for all of them (tools/setup.sh --all)
#   tools/test_matrix.sh avx2 neon    just those presets; installs only the native tools
#                                     (tools/setup.sh), so a cross preset needs `setup.sh --all` once
# Logs: build/<preset>.log. Exit status: non-zero if any preset failed.
set -u
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then tools/setup.sh --all; else tools/setup.sh; fi || { echo "test_matrix.sh: setup failed" >&2; exit 1; }
# Every workflow preset (CMakePresets.json and the files it includes), in their order.
all=$(cmake --workflow --list-presets 2>/dev/null | sed -n 's/^ *"\([^"]*\)".*/\1/p')
presets=${*:-$all}
if [ -z "$presets" ]; then
  echo "test_matrix.sh: cmake lists no workflow presets (is cmake >= 3.25 installed?)" >&2
  exit 1
fi
mkdir -p build
summary=""
failed=0
start_all=$(date +%s)
for p in $presets; do
  start=$(date +%s)
  log="build/$p.log"
  if cmake --workflow --preset "$p" --fresh >"$log" 2>&1; then
    status=PASS
  else
    status=FAIL
    failed=1
  fi
  secs=$(( $(date +%s) - start ))
  tests=$(grep -E "tests passed|tests failed" "$log" | tail -n 1)
  skipped=$(grep -c "\*\*\*Skipped\|(Skipped)" "$log" || true)
  line=$(printf "%-14s %s  %4ss  %s%s" "$p" "$status" "$secs" "${tests:-no test summary (see $log)}" \
    "$([ "$skipped" -gt 0 ] && echo "  [$skipped SKIPPED]")")
  echo "$line"
  summary="$summary$line
"
  [ "$status" = FAIL ] && tail -n 40 "$log"
done
echo
echo "=== legacy-ml test matrix ($(( $(date +%s) - start_all ))s) ==="
printf "%s" "$summary"
exit $failed
