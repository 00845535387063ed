// THE kernel table: for every kernel of the ABI (kernels/kernels.h), the implementations that
// exist besides the scalar reference (always compiled). An entry names an override set of
// simd/isa_table.h (code in kernels/<arch>/<set>/) or `hwy`, the body written once against Google
// Highway (kernels/hwy/), compiled for the build's static Highway target.
//
// How a build picks (kernels/binding.h, printed by `ml_run --version`): walk the build ISA's chain
// from simd/isa_table.h and take the first that applies:
//   1. the build ISA's own override set, if listed here;
//   2. `hwy`, if listed and the build ISA has a Highway target (isa_table.h's hwy column);
//   3. the parent's override set, then the grandparent's, ... (their code compiles fine with the
//      build's superset flags);
//   4. scalar.
// So with the rows below: avx512vnni → avxvnni → avx2 → sse41 → sse2 → scalar,
// sve → neon_dotprod → neon → scalar, neon_v7 → scalar (shares neon's set), wasm_simd128 → scalar,
// rvv → rv64 → scalar.
//
// matvec_q8/q4 and matmul_q8/q4 come together: every set that has a quantized matvec has the
// batched matmul (prompt prefill) from the same two parts through kernels/panel_driver.h, so every
// SIMD build reads each weight block once for several prompt tokens; only the scalar build runs
// matvec once per token (its matmul, the definition the others match bit for bit).
//
// The verify harness tests every implementation a build compiles (its own set, its ancestors',
// hwy, scalar) against scalar, so listing a set here is also a promise that it is tested.
//
// X(kernel, implementations besides scalar)
#define ML_KERNEL_TABLE(X) \
  X(matvec_q8,   sse2 | sse41 | avx2 | avxvnni | avx512vnni | neon | neon_dotprod | sve | wasm_simd128 | rvv | hwy) \
  X(matvec_q4,   sse2 | sse41 | avx2 | avxvnni | avx512vnni | neon | neon_dotprod | sve | wasm_simd128 | rvv | hwy) \
  X(matmul_q8,   sse2 | sse41 | avx2 | avxvnni | avx512vnni | neon | neon_dotprod | sve | wasm_simd128 | rvv | hwy) \
  X(matmul_q4,   sse2 | sse41 | avx2 | avxvnni | avx512vnni | neon | neon_dotprod | sve | wasm_simd128 | rvv | hwy) \
  X(matvec_f32,  sse2 | hwy) \
  X(quantize_q8, sse2 | rvv | hwy) \
  X(dequantize_q8, sse2 | hwy) \
  X(rmsnorm,     sse2 | rvv | hwy) \
  X(softmax,     sse2 | rvv | hwy) \
  X(rope,        sse2 | rvv | hwy) \
  X(silu_mul,    sse2 | rvv | hwy) \
  X(add,         sse2 | rvv | hwy) \
  X(dot_f32,     sse2 | rvv | hwy) \
  X(axpy_f32,    sse2 | rvv | hwy) \
  X(dot_f32_cols,  sse2 | rvv | hwy) \
  X(axpy_f32_rows, sse2 | rvv | hwy) \
  X(exp_f32,     sse2 | rvv | hwy)
