#!/bin/sh
# Installs what legacy-ml needs from Debian's apt (only what is missing). Root, or sudo.
#   tools/setup.sh          native builds: compiler, cmake, ninja, Highway, Catch2, numpy
#   tools/setup.sh --all    plus cross compilers, qemu-user, Emscripten, Chromium, clang (CI)
set -eu
pkgs="g++ cmake ninja-build libhwy-dev catch2 python3 python3-numpy"
if [ "${1:-}" = "--all" ]; then
  pkgs="$pkgs qemu-user g++-aarch64-linux-gnu g++-arm-linux-gnueabihf g++-riscv64-linux-gnu clang clang-16 \
lld-16 libclang-rt-14-dev emscripten nodejs chromium"
fi
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "setup.sh: installing:$missing" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
if [ "${1:-}" = "--all" ] && ! command -v npm >/dev/null; then  # NodeSource's nodejs bundles npm; Debian's does not
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends npm >/dev/null
fi
echo "setup.sh: everything needed is installed" >&2
