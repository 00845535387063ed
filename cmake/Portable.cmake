# Builds for the downloads (tools/package.sh, issue 37): programs that start on any Linux of their
# architecture, however old its glibc (CentOS 7's 2.17, Debian 9, a 2019 Raspberry Pi OS), where a
# plain build needs the build machine's glibc 2.36. The one place the link flags for old systems
# live; ML_PORTABLE=ON is set by the Linux ISA presets (tools/gen_presets.py, PORTABLE), so the
# matrix's build folders are the packaged ones and every preset's tests run the packaged programs.
#
#   ml_portable_program(t)  ml_run, ml_bench, ml_tokenize, ml_server, the launcher: -static (no dynamic
#                           section at all; RISC-V's oldest glibc is 2.27, so static is the only way
#                           there). What a static glibc program gives up, and why it does not
#                           matter here: dlopen (unused); locales (unused: the C locale only);
#                           NSS modules (getaddrinfo of a numeric address needs none; a host NAME
#                           does: the downloader resolves through the curl program, and ml_server
#                           takes only numbers or localhost, below).
#                           --hf downloads through the system's `curl` program
#                           (hub/http_curl_program.cc, cmake/Hub.cmake): libcurl cannot be linked
#                           statically.
#   ml_portable_shared(t)   a shared library for the Python wheel (python/, which cannot be
#                           static: Python dlopens it): libstdc++ and libgcc linked in
#                           (-static-libstdc++ -static-libgcc), so it needs only libc/libm/ld.so;
#                           verify/package_test.py then fails if any symbol version it needs is
#                           newer than GLIBC_2.17 (RISC-V: 2.27, its first). libstdc++.a and
#                           libgcc_eh.a were built against Debian 12's glibc 2.36 and reference
#                           newer symbols; on x86-64, AArch64, ARMv7 and RISC-V 64
#                           cmake/glibc_compat.c brings them under the line (its header says why
#                           each symbol is there; its #if table holds each architecture's old
#                           version names): local definitions of those with no older version
#                           (__libc_single_threaded, _dl_find_object, arc4random, getentropy),
#                           and -Wl,--wrap for those with one (ML_GLIBC_WRAP below), whose __wrap_
#                           calls the old version; pthread_* were in libpthread.so.0 before 2.34,
#                           so it is linked too (--no-as-needed).
#   ml_server               the same -static as the programs, on the whole header-only httplib.h
#                           (server/CMakeLists.txt; no OpenSSL/brotli/zlib: Debian's libcpp-httplib
#                           is shared only). A static program cannot resolve host NAMES (NSS), so
#                           --host takes a numeric address or localhost (= 127.0.0.1) in every build.
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

# The glibc symbols glibc_compat.c wraps (kept in step with its header comment).
set(ML_GLIBC_WRAP pthread_create pthread_join pthread_detach pthread_once pthread_key_create
    __pthread_key_create pthread_key_delete pthread_getspecific pthread_setspecific fstat fstat64
    stat expf logf powf exp2f log2f exp log pow)
function(ml_portable_shared target)
  if(NOT ML_PORTABLE)
    return()
  endif()
  target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc)
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64|aarch64|arm64|armv7l|riscv64)$")
    target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/cmake/glibc_compat.c)
    list(TRANSFORM ML_GLIBC_WRAP PREPEND "-Wl,--wrap=" OUTPUT_VARIABLE _wrap)
    target_link_options(${target} PRIVATE ${_wrap})
    target_link_libraries(${target} PRIVATE -Wl,--push-state,--no-as-needed -l:libpthread.so.0 -Wl,--pop-state)
  endif()
endfunction()
