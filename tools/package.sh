#!/bin/sh
# The downloads: one archive per target, for people who will not build (README, "Download and run").
#   tools/package.sh [--out DIR] [--only-built] [TARGET ...]
#
#   TARGET            archive        builds (presets)                                 programs
#   linux-x86_64      .tar.gz        scalar sse2 sse41 avx2 avxvnni avx512vnni + launcher
#   linux-aarch64     .tar.gz        neon neon-dotprod sve + launcher
#   linux-armv7       .tar.gz        neon-v7 + launcher
#   linux-riscv64     .tar.gz        rv64 rvv + launcher
#   windows-x86_64    .zip           win-sse2 win-avx2 win-avx512vnni (no launcher: one folder each)
#   (no TARGET: all five)
#
# A Linux archive is a multi-ISA install without the development files: bin/ml_run, ml_bench,
# ml_tokenize, ml_server are the launcher (launcher/ml_launcher.cc: starts the best build for the
# CPU; ML_ISA forces one), libexec/legacy-ml/<isa>/bin/ the builds. The Linux programs are static
# (the Linux presets set ML_PORTABLE, cmake/Portable.cmake; ml_server on the header-only httplib.h
# of tools/setup.sh --all), so they start on any Linux of their architecture (CentOS 7's glibc 2.17
# and older); --hf runs the system's curl program. The Windows folders have ml_server.exe
# (docs/windows.md). Every archive carries the Python wheel (python/, built offline by pip from the
# archive's libml_<isa>.so + libml_probe.so, which load on glibc 2.17, RISC-V 2.27:
# cmake/glibc_compat.c; Windows: ml_<isa>.dll + ml_probe.dll, tagged win_amd64).
# Each archive also has README.txt and SHA256SUMS (every other file of the archive); DIR/SHA256SUMS
# lists the archives.
#
# Builds: a configured build/<preset> is reused as it is (CI has just built every preset in
# tools/test_matrix.sh; only the packaged programs are brought up to date); a missing one is
# configured with its preset and built, or with --only-built left out of the archive (a line says
# so; a target with no build at all is skipped). verify/package_test.py checks the archives
# (tools/test_matrix.sh's pseudo-preset `package`).
# Exit status: 0, 1 when a build or the wheel fails, 6 for a bad argument.
set -eu
usage() { echo "usage: tools/package.sh [--out DIR] [--only-built] [linux-x86_64|linux-aarch64|linux-armv7|linux-riscv64|windows-x86_64 ...]" >&2; exit 6; }
out=build/packages
only_built=no
targets=""
while [ $# -gt 0 ]; do
  case $1 in
    --out) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
    --only-built) only_built=yes; shift ;;
    -h|--help) sed -n '2,28p' "$0" | cut -c3-; exit 0 ;;
    linux-x86_64|linux-aarch64|linux-armv7|linux-riscv64|windows-x86_64) targets="$targets $1"; shift ;;
    *) usage ;;
  esac
done
[ -n "$targets" ] || targets="linux-x86_64 linux-aarch64 linux-armv7 linux-riscv64 windows-x86_64"
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
jobs=${ML_JOBS:-2}
version=$(sed -n 's/^project(legacy_ml VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
programs="ml_run ml_bench ml_tokenize"
# Every build also ships ml_server when it was configured with the whole httplib.h
# (server/CMakeLists.txt; tools/setup.sh --all fetches it); without it the archive says so.
has_server() {  # build dir
  case $1 in
    */win-*) grep -q '^ML_HTTPLIB_INCLUDE:PATH=/' "$1/CMakeCache.txt" ;;
    *) grep -q '^ML_HTTPLIB_WHOLE:PATH=/' "$1/CMakeCache.txt" ;;
  esac
}

# ready PRESET: 0 when build/PRESET has the packaged programs up to date (configuring and building
# it if needed), 1 when --only-built leaves it out.
ready() {
  bdir="build/$1"
  if [ ! -f "$bdir/CMakeCache.txt" ]; then
    if [ "$only_built" = yes ]; then
      echo "package.sh: $1: not built (build/$1), left out (--only-built)" >&2
      return 1
    fi
    echo "package.sh: $1: configuring $bdir" >&2
    cmake --preset "$1" >/dev/null
  fi
  case $1 in win-*) want="$programs" ;; *) want="$programs ml_launcher" ;; esac
  want="$want ml_python"
  # shellcheck disable=SC2086
  cmake --build "$bdir" -j "$jobs" --target $want >"$bdir/package-build.log" 2>&1 || {
    tail -n 30 "$bdir/package-build.log" >&2; echo "package.sh: building $bdir failed ($bdir/package-build.log)" >&2; exit 1; }
  # ml_server once that build has configured again (a folder configured before may now find httplib.h)
  if has_server "$bdir"; then
    cmake --build "$bdir" -j "$jobs" --target ml_server >>"$bdir/package-build.log" 2>&1 || {
      tail -n 30 "$bdir/package-build.log" >&2; echo "package.sh: building $bdir failed ($bdir/package-build.log)" >&2; exit 1; }
  fi
  case $1 in
    win-*) ;;
    *) grep -q '^ML_PORTABLE:BOOL=ON' "$bdir/CMakeCache.txt" || {
         echo "package.sh: $bdir was configured without ML_PORTABLE=ON (its programs need this machine's glibc); configure it with its preset again" >&2; exit 1; } ;;
  esac
}

# The Python wheel: pip wheel ./python offline (as ctest python.package installs it) from the
# archive's libml_<isa>.so and libml_probe.so (LEGACY_ML_LIBS), tagged for the archive's
# architecture (ARMv7: linux_armv7l, what pip on a Raspberry Pi asks for; cmake/glibc_compat.c
# brings the libraries under the archive's glibc line). Windows: the win-* builds' ml_<isa>.dll and
# ml_probe.dll, tagged win_amd64 (arch). 0, or 1 when pip fails.
wheel() {  # dir arch libdirs...
  wd=$1 warch=$2; shift 2
  wlibs=$(echo "$@" | tr ' ' ':')
  wtmp=$(mktemp -d)
  # setup.py keeps only this machine's architecture's libraries: an AArch64 wheel built on x86-64
  # says which it is packing (LEGACY_ML_ARCH) and is tagged linux_aarch64.
  if LEGACY_ML_LIBS=$wlibs LEGACY_ML_ARCH=$warch PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore \
     /usr/bin/python3 -m pip wheel -q --no-deps --no-build-isolation --no-index ./python -w "$wtmp" \
     >"$wtmp.log" 2>&1; then
    mkdir -p "$wd/python"
    mv "$wtmp"/*.whl "$wd/python/"
    rm -rf "$wtmp" "$wtmp.log"
  else
    tail -n 20 "$wtmp.log" >&2
    echo "package.sh: the Python wheel failed ($wtmp.log)" >&2
    rm -rf "$wtmp"
    exit 1
  fi
}

readme() {  # target dir isas
  rt=$1 d=$2 risas=$3
  {
    echo "legacy-ml $version, $rt"
    echo
    case $rt in
      windows-*)
        echo "Windows 7 SP1 or later, x86-64 (verify/package_test.py checks every imported Win32 function"
        echo "against that). One folder per build; take the newest your CPU has:"
        echo "  sse2        every x86-64 CPU"
        echo "  avx2        Haswell (2013) and later, Zen"
        echo "  avx512vnni  Cascade Lake (2019), Ice Lake, Zen 4"
        echo "A build for a CPU feature the machine lacks says so in one line and exits with status 5."
        echo
        echo "  sse2\\ml_run.exe model.gguf -i \"Once upon a time\""
        echo
        echo "--hf ORG/REPO[:QUANT] downloads through WinHTTP."
        if [ "$no_server" = yes ]; then
          echo "ml_server.exe is not in this download (built without cpp-httplib's whole header)."
        else
          echo "ml_server.exe is the OpenAI-compatible HTTP server (sse2\\ml_server.exe model.gguf, then"
          echo "http://127.0.0.1:8080/); Ctrl-C stops it."
        fi
        if ls "$d"/python/*.whl >/dev/null 2>&1; then
          echo
          echo "python\\ holds the Python package (llama-cpp-python's Llama API; 64-bit Python 3.6 or"
          echo "later): pip install python\\legacy_ml-*.whl. It loads lib\\ml_<isa>.dll for the CPU as"
          echo "the folders above are chosen. Tested under Wine from C (the same DLL calls as the"
          echo "package); the Python side itself was not run on Windows (docs/windows.md)."
        fi ;;
      *)
        echo "Linux on ${rt#linux-}, any distribution: the programs are static (no glibc"
        echo "version needed, only a Linux kernel 3.2 or later: CentOS 7, Debian 8/9, Raspberry Pi"
        echo "OS of 2015 all run them)."
        echo "bin/ml_run, bin/ml_bench, bin/ml_tokenize, bin/ml_server start the best build for this CPU from"
        echo "libexec/legacy-ml/<isa>/ (builds here: $risas); ML_ISA=<isa> forces one, and"
        echo "bin/ml_run --version says which ran and why."
        echo
        echo "  bin/ml_run model.gguf -i \"Once upon a time\""
        echo "  bin/ml_run --hf ORG/REPO:Q4_0 --chat"
        echo
        echo "--hf downloads by running the system's curl program (install curl if it is missing)."
        if [ "$no_server" = yes ]; then
          echo "ml_server is not in this download (built without cpp-httplib's whole header)."
        else
          echo "bin/ml_server model.gguf is the OpenAI-compatible HTTP server (http://127.0.0.1:8080/;"
          echo "--host takes a numeric address, e.g. 0.0.0.0 with --api-key KEY: a static program"
          echo "cannot look host names up). Ctrl-C stops it."
        fi
        if ls "$d"/python/*.whl >/dev/null 2>&1; then
          echo
          echo "python/ holds the Python package (llama-cpp-python's Llama API; Python 3.6 or later,"
          echo "glibc $([ "$rt" = linux-riscv64 ] && echo 2.27 || echo 2.17) or later): pip install python/legacy_ml-*.whl"
        fi ;;
    esac
    echo
    echo "SHA256SUMS lists every other file here: sha256sum -c SHA256SUMS"
  } >"$d/README.txt"
}

sums() {  # dir: SHA256SUMS of every file below it
  (cd "$1" && find . -type f ! -name SHA256SUMS | LC_ALL=C sort | sed 's|^\./||' | xargs -d '\n' sha256sum >SHA256SUMS)
}

made=""
for t in $targets; do
  name="legacy-ml-$version-$t"
  work="$out/$name"
  rm -rf "$work" "$out/$name.tar.gz" "$out/$name.zip"
  mkdir -p "$work"
  case $t in
    linux-x86_64) presets="scalar sse2 sse41 avx2 avxvnni avx512vnni" arch=x86_64 ;;
    linux-aarch64) presets="neon neon-dotprod sve" arch=aarch64 ;;
    linux-armv7) presets="neon-v7" arch=armv7l ;;
    linux-riscv64) presets="rv64 rvv" arch=riscv64 ;;
    windows-x86_64) presets="win-sse2 win-avx2 win-avx512vnni" arch=win_amd64 ;;
  esac
  isas="" dirs="" first="" no_server=no
  for p in $presets; do
    ready "$p" || continue
    dir="build/$p"
    isa=$(sed -n 's/^ML_ISA:STRING=//p' "$dir/CMakeCache.txt")
    case $t in
      windows-*) dest="$work/$isa" ext=.exe ;;
      *) dest="$work/libexec/legacy-ml/$isa/bin" ext="" ;;
    esac
    mkdir -p "$dest"
    progs=$programs
    if has_server "$dir"; then progs="$progs ml_server"; else no_server=yes; fi
    for prog in $progs; do install -m 755 "$dir/$prog$ext" "$dest/$prog$ext"; done
    [ -n "$first" ] || first=$dir
    isas="$isas $isa" dirs="$dirs $(pwd)/$dir"
  done
  isas=${isas# }
  if [ -z "$isas" ]; then
    echo "package.sh: $t: no build, no archive" >&2
    rm -rf "$work"
    continue
  fi
  case $t in
    windows-*) ;;
    *) mkdir -p "$work/bin"
       lprogs=$programs
       [ "$no_server" = yes ] || lprogs="$lprogs ml_server"
       for prog in $lprogs; do install -m 755 "$first/ml_launcher" "$work/bin/$prog"; done ;;
  esac
  # shellcheck disable=SC2086
  wheel "$work" "$arch" $dirs
  readme "$t" "$work" "$isas"
  sums "$work"
  case $t in
    windows-*) (cd "$out" && rm -f "$name.zip" && zip -qr -X "$name.zip" "$name") && file="$name.zip" ;;
    *) tar -C "$out" --owner=0 --group=0 --numeric-owner --sort=name -czf "$out/$name.tar.gz" "$name" && file="$name.tar.gz" ;;
  esac
  rm -rf "$work"
  made="$made $file"
  echo "package.sh: $out/$file: $isas" >&2
done
[ -n "$made" ] || { echo "package.sh: no archive made" >&2; exit 1; }
# shellcheck disable=SC2086
(cd "$out" && sha256sum $made >SHA256SUMS)
echo "package.sh: $out/SHA256SUMS:$made" >&2
