# Cross toolchain: AArch64 Linux (Debian's g++-aarch64-linux-gnu). Used by the neon, neon-dotprod
# and sve presets (cmake/presets/arm.json), which also set CMAKE_CROSSCOMPILING_EMULATOR to
# qemu-aarch64 with a CPU model, so ctest runs every test binary under qemu.
# ISA flags (-march=...) come from simd/isa_table.h and apply only to ISA-compiled code; the CPU
# guard and every main() are built with the compiler's baseline (armv8-a).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(ML_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${ML_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${ML_CROSS_TRIPLE}-g++)
# The target's sysroot (libc, libstdc++): where qemu finds the dynamic loader (-L) too.
set(CMAKE_FIND_ROOT_PATH /usr/${ML_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
