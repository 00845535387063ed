# Builds for the downloads (tools/package.sh, issue 37): programs that start on any Linux of their
# architecture, however old its glibc (CentOS 7's 2.17, Debian 9, a 2019 Raspberry Pi OS), where a
# plain build needs the build machine's glibc 2.36. The one place the link flags for old systems
# live; ML_PORTABLE=ON is set by the Linux ISA presets (tools/gen_presets.py, PORTABLE), so the
# matrix's build folders are the packaged ones and every preset's tests run the packaged programs.
#
#   ml_portable_program(t)  ml_run, ml_bench, ml_tokenize, the launcher: -static (no dynamic
#                           section at all; RISC-V's oldest glibc is 2.27, so static is the only way
#                           there). What a static glibc program gives up, and why it does not
#                           matter here: dlopen (unused); locales (unused: the C locale only);
#                           NSS modules (getaddrinfo reads /etc/hosts and DNS itself; only a host
#                           NAME needs it, and the downloader resolves through the curl program).
#                           --hf downloads through the system's `curl` program
#                           (hub/http_curl_program.cc, cmake/Hub.cmake): libcurl cannot be linked
#                           statically.
#   ml_portable_shared(t)   a shared library for the Python wheel (python/, which cannot be
#                           static: Python dlopens it): libstdc++ and libgcc linked in
#                           (-static-libstdc++ -static-libgcc), so it needs only libc/libm/ld.so;
#                           verify/package_test.py then fails if any symbol version it needs is
#                           newer than GLIBC_2.17 (or the architecture's first glibc). NOT enough
#                           on Debian 12 alone (measured on a probe .so with std::thread, <cmath>,
#                           mmap): libstdc++.a and libgcc_eh.a reference pthread_*@2.34, fstat@2.33,
#                           expf/logf/powf@2.27, getentropy@2.25, and symbols with no older version
#                           at all (__libc_single_threaded@2.32, _dl_find_object@2.35,
#                           arc4random@2.36), so .symver pins cannot reach 2.17: that needs an
#                           old-glibc sysroot (a CentOS 7 / manylinux2014 toolchain) or local
#                           definitions of those three plus --wrap pins for the rest.
# ml_server is NOT portable: it links Debian's cpp-httplib, which ships only a shared library
# (libcpp-httplib.so.0.11, with OpenSSL 3, brotli, zlib); it stays a dynamic program and the
# downloads do not carry it (README, "Download and run").
# Windows (mingw-w64) programs are already self-contained (cmake/toolchains/mingw64.cmake).
option(ML_PORTABLE "link the programs for old Linux systems (static; the downloads, tools/package.sh)" OFF)
if(ML_PORTABLE AND (WIN32 OR EMSCRIPTEN OR ML_SANITIZE OR ML_FUZZ))
  message(FATAL_ERROR "ML_PORTABLE=ON is for Linux builds without sanitizers (the ISA presets)")
endif()

function(ml_portable_program target)
  if(ML_PORTABLE)
    target_link_options(${target} PRIVATE -static)
  endif()
endfunction()

function(ml_portable_shared target)
  if(ML_PORTABLE)
    target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc)
  endif()
endfunction()
