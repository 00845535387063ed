// Element-wise kernels, sse2 override set: silu_mul, add, exp_f32, the 4-lane bodies of
// simd/f32x4_math.h (exp: simd/exp.h's polynomial): bit-identical to kernels/scalar/elementwise.cc.
// With -DML_ASM=ON, add comes from add.S instead (kernels/x86/sse2/asm.cmake).
#include "kernels/kernels.h"
#include "simd/f32x4_math.h"

extern "C" void ml_k_silu_mul_sse2(float *g, const float *u, int n) { ml::f4::silu_mul(g, u, n); }
#if !defined(ML_ASM_add_sse2)
extern "C" void ml_k_add_sse2(float *y, const float *x, int n) { ml::f4::add(y, x, n); }
#endif
extern "C" void ml_k_exp_f32_sse2(float *y, const float *x, int n) { ml::f4::exp_f32(y, x, n); }
