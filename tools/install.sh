#!/bin/sh
# A multi-ISA install: every ISA build of one architecture in one prefix, started through launchers.
#   tools/install.sh [--arch x86_64|aarch64] [--deb DIR] [--python] PREFIX
#
#   PREFIX/libexec/legacy-ml/<isa>/   `cmake --install` of each build (bin/, include/, lib/ with the
#                                     CMake package and legacy-ml.pc of that ISA)
#   PREFIX/bin/ml_run, ml_bench, ml_tokenize (ml_server when the builds have it)
#                                     launcher/ml_launcher.cc, compiled without ISA flags: detects
#                                     the CPU with the guard's code, execs the best installed build
#                                     (ML_ISA=<isa> forces one; ml_run --version says which and why)
#   PREFIX/lib/cmake/legacy_ml/       find_package(legacy_ml): one build's libraries, LEGACY_ML_ISA
#                                     picks which (default: the oldest CPU's build, sse2 / neon)
#   PREFIX/lib/pkgconfig/legacy-ml.pc that default build; legacy-ml-<isa>.pc each build
#   --python: PREFIX/lib/python/legacy_ml   the Python binding (python/README.md) with every build's
#                                     libml_<isa>.so (PYTHONPATH=PREFIX/lib/python), and its wheel in
#                                     PREFIX/share/legacy-ml/ (Debian's pip and setuptools, offline)
#
# Builds: x86_64: scalar sse2 sse41 avx2 avxvnni avx512vnni; aarch64: neon neon-dotprod sve. A
# configured build/<preset> is reused as it is (CI has just built them all in tools/test_matrix.sh:
# only what the install needs is brought up to date); a missing one is configured with its preset.
# --arch aarch64 on an x86-64 host uses the cross presets (tools/setup.sh --all installs the cross
# compiler); on an AArch64 host the builds are native (build/native-<preset>, as tools/quickstart.sh).
# --deb DIR: also a Debian package of the prefix (CPack), installing to /opt/legacy-ml, into DIR.
set -eu
usage() { echo "usage: tools/install.sh [--arch x86_64|aarch64] [--deb DIR] [--python] PREFIX" >&2; exit 6; }
host=$(uname -m)
arch=$host
deb=""
python=""
prefix=""
while [ $# -gt 0 ]; do
  case $1 in
    --arch) [ $# -ge 2 ] || usage; arch=$2; shift 2 ;;
    --deb) [ $# -ge 2 ] || usage; deb=$2; shift 2 ;;
    --python) python=1; shift ;;
    -h|--help) sed -n '2,23p' "$0" | cut -c3-; exit 0 ;;
    -*) usage ;;
    *) [ -z "$prefix" ] || usage; prefix=$1; shift ;;
  esac
done
[ -n "$prefix" ] || usage
if [ -n "$python" ] && [ "$(echo "$arch" | sed 's/amd64/x86_64/;s/arm64/aarch64/')" != "$host" ]; then
  echo "install.sh: --python installs for this machine's architecture ($host), not --arch $arch" >&2; exit 6
fi
case $arch in
  x86_64|amd64) arch=x86_64 presets="scalar sse2 sse41 avx2 avxvnni avx512vnni" default_isa=sse2 debarch=amd64 ;;
  aarch64|arm64) arch=aarch64 presets="neon neon-dotprod sve" default_isa=neon debarch=arm64 ;;
  *) echo "install.sh: no multi-ISA install for $arch (x86_64 or aarch64)" >&2; exit 6 ;;
esac
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
[ -z "$deb" ] || { mkdir -p "$deb"; deb=$(cd "$deb" && pwd); }
cd "$(dirname "$0")/.."
jobs=${ML_JOBS:-2}
libexec="$prefix/libexec/legacy-ml"
rm -rf "$libexec" "$prefix/lib/cmake/legacy_ml" "$prefix/lib/pkgconfig"/legacy-ml*.pc
mkdir -p "$libexec" "$prefix/bin" "$prefix/lib/cmake/legacy_ml" "$prefix/lib/pkgconfig"

first_dir=""
isas=""
for p in $presets; do
  if [ "$host" = "$arch" ] && [ "$arch" != x86_64 ]; then  # native ARM: as tools/quickstart.sh
    dir="build/native-$p"
    [ -f "$dir/CMakeCache.txt" ] || cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DML_ISA="$(echo "$p" | tr - _)" -DML_TESTS=OFF >/dev/null
  else
    dir="build/$p"
    if [ -f "$dir/CMakeCache.txt" ]; then
      echo "install.sh: $p: reusing $dir" >&2
    else
      echo "install.sh: $p: configuring $dir" >&2
      cmake --preset "$p" >/dev/null
    fi
  fi
  cmake --build "$dir" -j "$jobs" --target ml_install_deps >"$dir/install-build.log" 2>&1 || {
    tail -n 30 "$dir/install-build.log" >&2; echo "install.sh: building $dir failed ($dir/install-build.log)" >&2; exit 1; }
  isa=$(sed -n 's/^ML_ISA:STRING=//p' "$dir/CMakeCache.txt")
  cmake --install "$dir" --prefix "$libexec/$isa" >/dev/null
  [ -n "$first_dir" ] || first_dir=$dir
  isas="$isas $isa"
  # The pkg-config file of this build, from the prefix's own lib/pkgconfig.
  sed "s|^prefix=.*|prefix=\${pcfiledir}/../../libexec/legacy-ml/$isa|" "$libexec/$isa/lib/pkgconfig/legacy-ml.pc" \
    >"$prefix/lib/pkgconfig/legacy-ml-$isa.pc"
done
isas=${isas# }

# The launchers: one program (built without ISA flags in the oldest build), one copy per name.
programs="ml_run ml_bench ml_tokenize"
for i in $isas; do [ -x "$libexec/$i/bin/ml_server" ] && { programs="$programs ml_server"; break; }; done
for prog in ml_run ml_bench ml_tokenize ml_server; do rm -f "$prefix/bin/$prog"; done
for prog in $programs; do
  install -m 755 "$first_dir/ml_launcher" "$prefix/bin/$prog"
done

# Consumers: the default build's package and pkg-config file at the top; LEGACY_ML_ISA picks another.
cp "$prefix/lib/pkgconfig/legacy-ml-$default_isa.pc" "$prefix/lib/pkgconfig/legacy-ml.pc"
cp "$libexec/$default_isa/lib/cmake/legacy_ml/legacy_mlConfigVersion.cmake" "$prefix/lib/cmake/legacy_ml/"
cat >"$prefix/lib/cmake/legacy_ml/legacy_mlConfig.cmake" <<CFG
# find_package(legacy_ml) in a multi-ISA install (tools/install.sh): the libraries of ONE build,
# chosen by LEGACY_ML_ISA (default $default_isa, the build for the oldest $arch CPU).
# Installed builds: $isas. A program linking them needs a CPU with that build's features.
if(NOT LEGACY_ML_ISA)
  set(LEGACY_ML_ISA $default_isa)
endif()
string(REPLACE "-" "_" LEGACY_ML_ISA "\${LEGACY_ML_ISA}")
set(_legacy_ml_dir "\${CMAKE_CURRENT_LIST_DIR}/../../../libexec/legacy-ml/\${LEGACY_ML_ISA}/lib/cmake/legacy_ml")
if(NOT EXISTS "\${_legacy_ml_dir}/legacy_mlConfig.cmake")
  set(legacy_ml_FOUND FALSE)
  set(legacy_ml_NOT_FOUND_MESSAGE "LEGACY_ML_ISA=\${LEGACY_ML_ISA} is not installed here (installed: $isas)")
  return()
endif()
include("\${_legacy_ml_dir}/legacy_mlConfig.cmake")
CFG
echo "install.sh: $prefix: builds $isas; launchers $programs" >&2

if [ -n "$python" ]; then  # the wheel from every build's libml_<isa>.so (python/setup.py), installed into a folder
  py=${ML_PYTHON:-/usr/bin/python3}
  libs=""
  for i in $isas; do libs="$libs${libs:+:}$libexec/$i/lib"; done
  site="$prefix/lib/python"
  wheels="$prefix/share/legacy-ml"
  rm -rf "$site/legacy_ml" "$site"/legacy_ml-*.dist-info "$wheels"/legacy_ml-*.whl
  mkdir -p "$site" "$wheels"
  LEGACY_ML_LIBS=$libs PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore "$py" -m pip wheel -q --no-deps --no-build-isolation --no-index -w "$wheels" ./python >&2
  PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore "$py" -m pip install -q --no-deps --no-index --upgrade --target "$site" "$wheels"/legacy_ml-*.whl >&2
  echo "install.sh: $site/legacy_ml (PYTHONPATH=$site; wheel: $(ls "$wheels"/legacy_ml-*.whl))" >&2
fi

if [ -n "$deb" ]; then
  version=$(sed -n 's/^project(legacy_ml VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
  work="build/cpack-$arch"
  rm -rf "$work" && mkdir -p "$work"
  cat >"$work/CPackConfig.cmake" <<CPK
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME legacy-ml)
set(CPACK_PACKAGE_VERSION $version)
set(CPACK_PACKAGE_FILE_NAME legacy-ml_${version}_$debarch)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Small Llama-style LLMs on legacy and modern CPUs: one build per ISA ($isas) and launchers")
set(CPACK_PACKAGE_DESCRIPTION "Each build is pinned to one ISA and refuses cleanly on a CPU without it; bin/ml_run, ml_bench and ml_tokenize start the best build for the CPU (ML_ISA=<isa> forces one).")
set(CPACK_PACKAGE_CONTACT "legacy-ml maintainers <legacy-ml@localhost>")
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE $debarch)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6, libstdc++6, libgcc-s1")
set(CPACK_PACKAGING_INSTALL_PREFIX /)
set(CPACK_INSTALLED_DIRECTORIES "$prefix;opt/legacy-ml")
set(CPACK_OUTPUT_FILE_PREFIX "$deb")
set(CPACK_PACKAGE_DIRECTORY "$(pwd)/$work")
CPK
  cpack --config "$work/CPackConfig.cmake" >"$work/cpack.log" 2>&1 || { cat "$work/cpack.log" >&2; exit 1; }
  echo "install.sh: $deb/legacy-ml_${version}_$debarch.deb (installs to /opt/legacy-ml)" >&2
fi
