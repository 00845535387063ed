// The ISA table: the one place that names every build ISA, its parent in the fallback chain, the
// kernel override set it compiles, the Highway static target it expects, its compiler flags and the
// CPU features those flags let the compiler use. CMake (cmake/IsaTable.cmake parses the rows below
// with a regex, so keep one row per line), the kernel binding (kernels/binding.h) and the CPU guard
// (simd/cpu_guard.cc) all read it.
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
//
// ARM: the features are Linux's HWCAP names (/proc/cpuinfo). -march=armv8.2-a brings ARMv8.1's LSE
// atomics (ATOMICS: GCC inlines them for std::atomic), RDM and CRC32; +sve brings FP16 (FPHP,
// ASIMDHP). sve's flags include +dotprod because the sve build also compiles its parent's set
// (neon_dotprod): an SVE CPU without dotprod (Fujitsu A64FX) is refused and runs the neon build.
// RISC-V: rv64gc (IMAFDC) is the baseline of every RISC-V Linux; V is AT_HWCAP's 'V' bit (RVV 1.0,
// VLEN >= 128). Both rows are built with clang-16 and Highway's RVV target disabled (broken in
// 1.0.3), which leaves EMU128 for the Highway bodies.
//
// X(arg, name, parent, impl, arch, hwy, flags, features)
#define ML_ISA_TABLE(X, arg) \
  X(arg, scalar,       scalar,       scalar,       any,     "",       "",                                                                                   "") \
  X(arg, sse2,         scalar,       sse2,         x86_64,  "",       "-msse2",                                                                             "SSE2") \
  X(arg, sse41,        sse2,         sse41,        x86_64,  "SSSE3",  "-msse4.1",                                                                           "SSE2 SSE3 SSSE3 SSE4.1") \
  X(arg, avx2,         sse41,        avx2,         x86_64,  "AVX2",   "-mavx2 -mfma -mbmi -mbmi2 -mf16c",                                                   "SSE2 SSE3 SSSE3 SSE4.1 SSE4.2 POPCNT AVX AVX2 FMA BMI1 BMI2 F16C") \
  X(arg, avxvnni,      avx2,         avxvnni,      x86_64,  "AVX2",   "-mavx2 -mfma -mbmi -mbmi2 -mf16c -mavxvnni",                                         "SSE2 SSE3 SSSE3 SSE4.1 SSE4.2 POPCNT AVX AVX2 FMA BMI1 BMI2 F16C AVX-VNNI") \
  X(arg, avx512vnni,   avxvnni,      avx512vnni,   x86_64,  "AVX3",   "-mavx2 -mfma -mbmi -mbmi2 -mf16c -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx512vnni", "SSE2 SSE3 SSSE3 SSE4.1 SSE4.2 POPCNT AVX AVX2 FMA BMI1 BMI2 F16C AVX512F AVX512BW AVX512DQ AVX512VL AVX512-VNNI") \
  X(arg, neon_v7,      scalar,       neon,         armv7,   "NEON",   "-march=armv7-a -mfpu=neon -mfloat-abi=hard",                                         "NEON") \
  X(arg, neon,         scalar,       neon,         aarch64, "NEON",   "-march=armv8-a",                                                                     "ASIMD") \
  X(arg, neon_dotprod, neon,         neon_dotprod, aarch64, "NEON",   "-march=armv8.2-a+dotprod",                                                           "ASIMD CRC32 ATOMICS ASIMDRDM ASIMDDP") \
  X(arg, sve,          neon_dotprod, sve,          aarch64, "SVE",    "-march=armv8.2-a+dotprod+sve",                                                       "ASIMD CRC32 ATOMICS ASIMDRDM ASIMDDP FPHP ASIMDHP SVE") \
  X(arg, wasm_simd128, scalar,       wasm_simd128, wasm32,  "WASM",   "-msimd128",                                                                          "") \
  X(arg, rv64,         scalar,       rv64,         riscv64, "EMU128", "-march=rv64gc",                                                                      "") \
  X(arg, rvv,          rv64,         rvv,          riscv64, "EMU128", "-march=rv64gcv",                                                                     "V")
