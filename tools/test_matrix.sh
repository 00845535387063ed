#!/bin/sh
# Builds and tests every preset (cmake --workflow --preset <p>), one line per preset at the end.
#   tools/test_matrix.sh              every workflow preset (what CI runs), then the mutation audit
#                                     (tools/mutants.sh); first installs what is missing for all of
#                                     them (tools/setup.sh --all)
#   tools/test_matrix.sh avx2 neon    just those presets; installs only the native tools
#                                     (tools/setup.sh), so a cross preset needs `setup.sh --all` once;
#                                     the pseudo-preset `mutants` runs the mutation audit,
#                                     `install` the install test (after the presets, from their
#                                     build folders; builds what is missing), `package` the
#                                     downloads (tools/package.sh, verify/package_test.py; likewise)
# Logs: build/<preset>.log, build/mutants.log, build/install.log. Exit status: non-zero if any preset failed.
#
# Three at a time: ML_MATRIX_JOBS presets (default 3; the mutation audit counts as one) build and
# test side by side, longest first (the order of `longest` below), so one preset's serial steps
# (configure, link, its slowest qemu test, a Python driver waiting on Wine) overlap the others' work
# on the two cores of a CI machine (with two at a time the cores were busy 78 % of the matrix).
# A preset's seconds are wall time while sharing the machine; its cpu seconds (user + system of
# everything it ran) are what it cost, the figure to cut when CI grows. The install test runs after all of
# them (it installs their build folders). ccache (installed by setup.sh) serves the objects that are
# the same in several presets — the Catch2 runner and the test case files, compiled without ISA
# flags or the ISA's id (CMakeLists.txt: ML_ISA_DEFINE), the JSON layer and the programs' own sources
# (ml_run, ml_tokenize, ml_server: CMakeLists.txt's ml_program) — so each is compiled once per
# compiler; CCACHE_DIR defaults to build/ccache. Emscripten too, through EM_COMPILER_WRAPPER.
#
# Skips: a test that did not run (exit 77 / SKIP_RETURN_CODE, a Python unittest skip reported by
# verify/run_unittest.py, a Disabled test) must be listed in verify/allowed_skips.txt for that
# preset (verify/check_skips.py); the summary line prints the allowed ones with their reasons.
# Under CI=true any other skip fails the preset; outside CI it is printed as "would fail CI".
# ML_ALLOWED_SKIPS=<file> replaces the allow-list (to see the gate fail: ML_ALLOWED_SKIPS=/dev/null).
set -u
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then tools/setup.sh --all; else tools/setup.sh; fi || { echo "test_matrix.sh: setup failed" >&2; exit 1; }
# Every workflow preset (CMakePresets.json and the files it includes), in their order.
all=$(cmake --workflow --list-presets 2>/dev/null | sed -n 's/^ *"\([^"]*\)".*/\1/p')
if [ -z "$all" ]; then
  echo "test_matrix.sh: cmake lists no workflow presets (is cmake >= 3.25 installed?)" >&2
  exit 1
fi
mutants=no
install=no
package=no
if [ $# -eq 0 ]; then
  presets=$all mutants=yes install=yes package=yes
else
  presets=""
  for p in "$@"; do
    case $p in
      mutants) mutants=yes ;;
      install) install=yes ;;
      package) package=yes ;;
      *) presets="$presets $p" ;;
    esac
  done
fi
allow=${ML_ALLOWED_SKIPS:-verify/allowed_skips.txt}
mkdir -p build
summary=""
failed=0
start_all=$(date +%s)
report() {  # name status seconds text
  line=$(printf "%-14s %s  %4ss  %s" "$1" "$2" "$3" "$4")
  echo "$line"
  summary="$summary$line
"
}
if command -v ccache >/dev/null; then
  export CCACHE_DIR="${CCACHE_DIR:-$PWD/build/ccache}"
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"  # paths below the checkout hash as relative ones
  ccache -z >/dev/null 2>&1
  ccache=ccache
else
  ccache=""
fi

# CPU seconds (user + system) of the finished children in a file `times` wrote (POSIX, its second
# line; `times` itself must run in the worker's shell, not in a command substitution's subshell): a
# preset's difference is what it cost the machine, whatever ran beside it.
cpu_of() { awk 'NR == 2 { split($1, u, "m"); split($2, s, "m"); printf "%d", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$1"; }

# One preset (or the mutation audit): writes its summary line to build/<name>.result, its log to
# build/<name>.log.
run_one() {
  p=$1
  start=$(date +%s)
  times >"build/$p.cpu"
  cpu0=$(cpu_of "build/$p.cpu")
  log="build/$p.log"
  if [ "$p" = mutants ]; then
    if [ ! -x tools/mutants.sh ]; then
      echo "tools/mutants.sh is missing" >"$log"
      status=FAIL
    elif CMAKE_CXX_COMPILER_LAUNCHER=$ccache CMAKE_C_COMPILER_LAUNCHER=$ccache tools/mutants.sh >"$log" 2>&1; then
      status=PASS
    else
      status=FAIL
    fi
    caught=$(grep "mutants caught:" "$log" | tail -n 1)
    times >"build/$p.cpu"
    printf "%-14s %s  %4ss  cpu %5ss  %s\n" mutants "$status" "$(( $(date +%s) - start ))" "$(( $(cpu_of "build/$p.cpu") - cpu0 ))" \
      "${caught:-$(tail -n 1 "$log")}" >"build/$p.result"
    return
  fi
  # wasm-simd128's tests (wasm.browser, wasm.npm) serve the wasm-scalar and wasm-simd128-threads
  # modules from those presets' folders: when they are in this run, wait for them to finish (they
  # stand before it in the queue, so they have started).
  if [ "$p" = wasm-simd128 ]; then
    for d in wasm-scalar wasm-simd128-threads; do
      case " $queue " in *" $d "*) while [ ! -e "build/$d.result" ]; do sleep 5; done ;; esac
    done
    start=$(date +%s)
  fi
  launcher=$ccache
  emwrap=""
  # em++ is a Python wrapper ccache does not know: Emscripten puts ccache before the clang it runs
  # instead (EM_COMPILER_WRAPPER), so wasm-simd128 gets wasm-scalar's test and JSON objects.
  case $p in wasm*) launcher="" emwrap=$ccache ;; esac
  if CMAKE_CXX_COMPILER_LAUNCHER=$launcher CMAKE_C_COMPILER_LAUNCHER=$launcher EM_COMPILER_WRAPPER=$emwrap \
     cmake --workflow --preset "$p" --fresh >"$log" 2>&1; then
    status=PASS
  else
    status=FAIL
  fi
  secs=$(( $(date +%s) - start ))
  tests=$(grep -E "tests passed|tests failed" "$log" | tail -n 1)
  # The preset's build folder, as ctest names it ("Test project <dir>").
  dir=$(sed -n 's/^Test project //p' "$log" | tail -n 1)
  skips=$(python3 verify/check_skips.py "$p" "$log" "${dir:-build/$p}" "$allow") || status=FAIL
  times >"build/$p.cpu"
  printf "%-14s %s  %4ss  cpu %5ss  %s\n" "$p" "$status" "$secs" "$(( $(cpu_of "build/$p.cpu") - cpu0 ))" \
    "${tests:-no test summary (see $log)}${skips:+  $skips}" >"build/$p.result"
}

# The queue: the longest presets first (by their seconds on the CI machine), then any not listed. Of
# the presets that share a compiler, the first to run compiles the test objects the others then get
# from ccache (sve before neon, rvv before rv64, scalar before the other x86 and the mutants build).
# wasm-scalar and wasm-simd128-threads before wasm-simd128: its www/ and npm package take their modules.
longest="rvv sve wasm-scalar wasm-simd128-threads neon-v7 rv64 sanitize-avx2 neon scalar wasm-simd128 mutants tsan neon-dotprod
         avx2 fuzz win-sse2 avxvnni avx512vnni win-avx2 sse41 sse2 win-avx512vnni"
jobs=$(echo $presets)  # one line, single spaces (cmake lists the presets one a line)
[ "$mutants" = yes ] && jobs="$jobs mutants"
queue=""
for p in $longest; do
  case " $jobs " in *" $p "*) queue="$queue $p" ;; esac
done
for p in $jobs; do
  case " $queue " in *" $p "*) ;; *) queue="$queue $p" ;; esac
done
qdir=build/matrix-queue
rm -rf "$qdir" && mkdir -p "$qdir"
n=0
for p in $queue; do
  n=$((n + 1))
  echo "$p" >"$qdir/$(printf %03d $n)"
  rm -f "build/$p.result"
done
worker() {  # takes the next queue entry (mkdir is the lock), until the queue is empty
  for f in "$qdir"/[0-9][0-9][0-9]; do
    [ -e "$f" ] || continue
    mkdir "$f.taken" 2>/dev/null || continue
    p=$(cat "$f")
    run_one "$p"
    cat "build/$p.result"
    case $(cat "build/$p.result") in *" FAIL "*) tail -n 40 "build/$p.log" ;; esac
  done
}
# The Windows presets share one Wine prefix (cmake/presets/windows.json): create it before two of
# them can start at once.
case " $queue " in
  *" win-"*) WINEPREFIX="$PWD/build/wineprefix" WINEDEBUG=-all /usr/lib/wine/wine64 wineboot --init >/dev/null 2>&1
             WINEPREFIX="$PWD/build/wineprefix" /usr/lib/wine/wineserver -w >/dev/null 2>&1 ;;
esac
lanes=${ML_MATRIX_JOBS:-3}
i=0
while [ $i -lt "$lanes" ]; do
  worker &
  i=$((i + 1))
done
wait
# The summary in the presets' own order.
for p in $jobs; do
  line=$(cat "build/$p.result" 2>/dev/null || printf "%-14s FAIL     ?s  no result (see build/%s.log)" "$p" "$p")
  case $line in *" FAIL "*) failed=1 ;; esac
  summary="$summary$line
"
done

# The install test: tools/install.sh into build/install-test/ from the build folders just built (x86-64:
# scalar ... avx512vnni; AArch64: neon, neon-dotprod, sve with the cross compiler), each with its .deb,
# then verify/install_test.py: the launcher's choice and the golden text under qemu CPU models,
# ML_ISA refusals, the Python binding (--python) likewise, find_package / pkg-config consumers, dpkg-deb -x
# of each package.
if [ "$install" = yes ]; then
  start=$(date +%s)
  log=build/install.log
  work=build/install-test
  note=""
  rm -rf "$work"
  (
    tools/install.sh --deb "$work/deb" --python "$work/$(uname -m)" || exit 1
    if [ "$(uname -m)" = x86_64 ]; then
      if command -v aarch64-linux-gnu-g++ >/dev/null; then
        tools/install.sh --arch aarch64 --deb "$work/deb" "$work/aarch64" || exit 1
      else
        echo "AArch64 install not tested: no aarch64-linux-gnu-g++ (tools/setup.sh --all installs it)"
        [ "${CI:-}" = true ] && exit 1
      fi
    fi
    /usr/bin/python3 verify/install_test.py "$work"
  ) >"$log" 2>&1 && status=PASS || status=FAIL
  grep -q "^AArch64 install not tested" "$log" && note="  [AArch64 not tested: no cross compiler]"
  [ "$status" = FAIL ] && failed=1
  checks=$(grep "^install test:" "$log" | tail -n 1)
  report install "$status" "$(( $(date +%s) - start ))" "${checks:-$(tail -n 1 "$log")}$note"
  [ "$status" = FAIL ] && tail -n 40 "$log"
fi

# The downloads: tools/package.sh into build/packages/ from the build folders just built (static Linux
# programs: ML_PORTABLE), then verify/package_test.py: checksums, every ELF static or within glibc
# 2.17's symbol versions, each Linux archive's programs from a fresh folder under qemu-user with an
# old CPU model printing the golden text, the Windows .exe imports against Windows 7.
if [ "$package" = yes ]; then
  start=$(date +%s)
  log=build/package.log
  (
    tools/package.sh --out build/packages || exit 1
    /usr/bin/python3 verify/package_test.py build/packages
  ) >"$log" 2>&1 && status=PASS || status=FAIL
  [ "$status" = FAIL ] && failed=1
  checks=$(grep "^package test:" "$log" | tail -n 1)
  report package "$status" "$(( $(date +%s) - start ))" "${checks:-$(tail -n 1 "$log")}"
  [ "$status" = FAIL ] && tail -n 40 "$log"
fi

if [ -n "$ccache" ]; then  # how much compiling the shared objects saved (hits of all compiles)
  hits=$(ccache -s 2>/dev/null | sed -n 's/^ *Hits: *\([0-9]* \/ *[0-9]*\).*/\1/p' | head -n 1)
  summary="${summary}ccache: ${hits:-?} compiles served from the cache
"
fi
echo
cpu_all=$(printf "%s" "$summary" | sed -n 's/.*  cpu  *\([0-9]*\)s  .*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
echo "=== legacy-ml test matrix ($(( $(date +%s) - start_all ))s, $lanes presets at a time, presets' cpu ${cpu_all}s) ==="
printf "%s" "$summary"
exit $failed
