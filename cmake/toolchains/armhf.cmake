# Cross toolchain: 32-bit ARM Linux, hard-float ABI (Debian's g++-arm-linux-gnueabihf). Used by the
# neon-v7 preset (cmake/presets/arm.json), which also sets CMAKE_CROSSCOMPILING_EMULATOR to
# qemu-arm with a CPU model, so ctest runs every test binary under qemu.
# ISA flags (-march=armv7-a -mfpu=neon -mfloat-abi=hard) come from simd/isa_table.h and apply only
# to ISA-compiled code; the CPU guard and every main() keep the compiler's baseline (Debian armhf:
# ARMv7-A, VFPv3-D16, Thumb-2, no NEON), so the guard runs on a CPU without NEON.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR armv7l)
set(ML_CROSS_TRIPLE arm-linux-gnueabihf)
set(CMAKE_C_COMPILER ${ML_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${ML_CROSS_TRIPLE}-g++)
set(CMAKE_FIND_ROOT_PATH /usr/${ML_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# GCC notes that std::pair<long long, T> is passed differently since GCC 7.1 (-Wpsabi, in Catch2's
# code): informational only, since everything here is built by one compiler.
set(CMAKE_CXX_FLAGS_INIT "-Wno-psabi")
