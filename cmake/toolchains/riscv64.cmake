# Cross toolchain: 64-bit RISC-V Linux (lp64d), clang-16 with Debian's gcc cross sysroot
# (g++-riscv64-linux-gnu: libc, libstdc++, crt files, GNU ld). Used by the rv64 and rvv presets
# (cmake/presets/riscv.json), which also set CMAKE_CROSSCOMPILING_EMULATOR to qemu-riscv64 with a
# CPU model, so ctest runs every test binary under qemu.
# Why clang for both presets: rvv needs the RVV intrinsics (`__riscv_` names; GCC 12 has none), and
# rv64's Highway static target is EMU128 only with clang (GCC < 12.3 gets HWY_SCALAR, Highway's
# workaround for GCC bug 106322); one compiler for the family keeps the two builds comparable.
# ISA flags (-march=rv64gc / rv64gcv) come from simd/isa_table.h and apply only to ISA-compiled
# code; the CPU guard and every main() keep the target's baseline (clang's riscv64-linux-gnu
# default: rv64gc, lp64d — no V), so the guard runs on a CPU without vectors.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR riscv64)
set(ML_CROSS_TRIPLE riscv64-linux-gnu)
# Compiler plus its mandatory argument: CMake keeps --target in CMAKE_<LANG>_COMPILER_ARG1, which
# every compile and link line and the flags-vs-guard test (cmake/Tests.cmake) pass on.
set(CMAKE_C_COMPILER clang-16 --target=${ML_CROSS_TRIPLE})
set(CMAKE_CXX_COMPILER clang++-16 --target=${ML_CROSS_TRIPLE})
# Linking: clang drives the cross GNU ld (riscv64-linux-gnu-ld). Not lld-16: it cannot link the
# sysroot's crt files (R_RISCV_ALIGN needs linker relaxation, which lld 16 lacks).
# -fno-slp-vectorize: clang's SLP vectorizer would emit RVV code of its own in the rvv build; SIMD
# here is written by hand (CMakeLists.txt passes -fno-tree-vectorize, the loop vectorizer).
set(CMAKE_C_FLAGS_INIT "-fno-slp-vectorize")
set(CMAKE_CXX_FLAGS_INIT "-fno-slp-vectorize")
set(CMAKE_FIND_ROOT_PATH /usr/${ML_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
