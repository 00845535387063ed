// The ISA table: the one place that names every build ISA, its parent in the fallback chain, the
// kernel override set it compiles, the Highway static target it expects, its compiler flags and the
// CPU features those flags let the compiler use, and the qemu CPU models its tests run it on. CMake
// (cmake/IsaTable.cmake parses the rows below with a regex, so keep one row per line; the guard
// tests, cmake/Tests.cmake), tools/gen_presets.py (the presets and their emulators), tools/bench_isas.py
// (the order), the kernel binding (kernels/binding.h) and the CPU guard (simd/cpu_guard.cc) read it.
//
// Columns:
//   name      build ISA; a CMake preset builds exactly one (ML_ISA=<name>)
//   parent    next ISA down the fallback chain (scalar's parent is itself)
//   impl      the kernel override set it compiles: kernels/<arch>/<impl>/ (neon_v7 shares neon's)
//   arch      x86_64 | armv7 | aarch64 | wasm32 | riscv64 | any
//   hwy       Highway static target the flags must select ("" = Highway body not used by this ISA)
//   flags     compiler flags for every ISA-compiled translation unit
//   features  what the CPU guard checks before any ISA-compiled code runs: every feature the flags
//             enable (a test compares this list with the compiler's predefined macros)
//   run       qemu CPU models (space-separated, qemu-user's -cpu argument) the build must run on:
//             each prints llama2.c's stories260K text (ctest guard.golden_on_<cpu>). Cross builds
//             (ARM, RISC-V): the first is the preset's emulator, which runs every test (no guard
//             test of its own). x86 builds run natively; theirs run under qemu-x86_64 7.2, whose
//             models are qemu64 (SSE2, SSE3), Nehalem (SSE4.2, no AVX), SandyBridge (AVX, no
//             AVX2), Haswell (AVX2, no AVX-512, no AVX-VNNI) (docs/toolchain.md).
//   refuse    qemu CPU models lacking a feature of the build: the CPU guard must print one line
//             naming it and exit with ML_E_ISA's status, never SIGILL (ctest guard.refuses_<cpu>)
//
// Models: cortex-a7 is the ARMv7 floor (NEON, VFPv4); cortex-a9,neon=off a Cortex-A9 without NEON
// (NVIDIA Tegra 2); cortex-a53 the AArch64 floor (ARMv8.0: no dotprod, atomics or RDM); cortex-a72
// has neither SVE nor dotprod; a64fx has SVE without dotprod; sifive-u54 is a real rv64gc core
// (HiFive Unleashed); rv64 is rv64gc without V.
//
// ARM: the features are Linux's HWCAP names (/proc/cpuinfo). -march=armv8.2-a brings ARMv8.1's LSE
// atomics (ATOMICS: GCC inlines them for std::atomic), RDM and CRC32; +sve brings FP16 (FPHP,
// ASIMDHP). sve's flags include +dotprod because the sve build also compiles its parent's set
// (neon_dotprod): an SVE CPU without dotprod (Fujitsu A64FX) is refused and runs the neon build.
// RISC-V: rv64gc (IMAFDC) is the baseline of every RISC-V Linux; V is AT_HWCAP's 'V' bit (RVV 1.0,
// VLEN >= 128). Both rows are built with clang-16 and Highway's RVV target disabled (broken in
// 1.0.3), which leaves EMU128 for the Highway bodies.
//
// X(arg, name, parent, impl, arch, hwy, flags, features, run, refuse)
#define ML_ISA_TABLE(X, arg) \
  X(arg, scalar,       scalar,       scalar,       any,     "",       "",                                                                                   "", "qemu64", "") \
  X(arg, sse2,         scalar,       sse2,         x86_64,  "",       "-msse2",                                                                             "SSE2", "qemu64", "") \
  X(arg, sse41,        sse2,         sse41,        x86_64,  "SSSE3",  "-msse4.1",                                                                           "SSE2 SSE3 SSSE3 SSE4.1", "Nehalem", "qemu64") \
  X(arg, avx2,         sse41,        avx2,         x86_64,  "AVX2",   "-mavx2 -mfma -mbmi -mbmi2 -mf16c",                                                   "SSE2 SSE3 SSSE3 SSE4.1 SSE4.2 POPCNT AVX AVX2 FMA BMI1 BMI2 F16C", "Haswell", "SandyBridge") \
  X(arg, avxvnni,      avx2,         avxvnni,      x86_64,  "AVX2",   "-mavx2 -mfma -mbmi -mbmi2 -mf16c -mavxvnni",                                         "SSE2 SSE3 SSSE3 SSE4.1 SSE4.2 POPCNT AVX AVX2 FMA BMI1 BMI2 F16C AVX-VNNI", "", "Haswell") \
  X(arg, avx512vnni,   avxvnni,      avx512vnni,   x86_64,  "AVX3",   "-mavx2 -mfma -mbmi -mbmi2 -mf16c -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx512vnni", "SSE2 SSE3 SSSE3 SSE4.1 SSE4.2 POPCNT AVX AVX2 FMA BMI1 BMI2 F16C AVX512F AVX512BW AVX512DQ AVX512VL AVX512-VNNI", "", "Haswell") \
  X(arg, neon_v7,      scalar,       neon,         armv7,   "NEON",   "-march=armv7-a -mfpu=neon -mfloat-abi=hard",                                         "NEON", "cortex-a15 cortex-a7", "cortex-a9,neon=off") \
  X(arg, neon,         scalar,       neon,         aarch64, "NEON",   "-march=armv8-a",                                                                     "ASIMD", "cortex-a53", "") \
  X(arg, neon_dotprod, neon,         neon_dotprod, aarch64, "NEON",   "-march=armv8.2-a+dotprod",                                                           "ASIMD CRC32 ATOMICS ASIMDRDM ASIMDDP", "neoverse-n1", "cortex-a53") \
  X(arg, sve,          neon_dotprod, sve,          aarch64, "SVE",    "-march=armv8.2-a+dotprod+sve",                                                       "ASIMD CRC32 ATOMICS ASIMDRDM ASIMDDP FPHP ASIMDHP SVE", "max,sve128=on", "cortex-a72 a64fx") \
  X(arg, wasm_simd128, scalar,       wasm_simd128, wasm32,  "WASM",   "-msimd128",                                                                          "", "", "") \
  X(arg, rv64,         scalar,       rv64,         riscv64, "EMU128", "-march=rv64gc",                                                                      "", "rv64 sifive-u54", "") \
  X(arg, rvv,          rv64,         rvv,          riscv64, "EMU128", "-march=rv64gcv",                                                                     "V", "rv64,v=true,vlen=256,vext_spec=v1.0", "rv64")
