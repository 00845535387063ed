// Element-wise kernels, rvv override set: silu_mul, add, exp_f32, the 4-lane bodies of
// simd/f32x4_math.h (exp: simd/exp.h's polynomial): bit-identical to kernels/scalar/elementwise.cc.
#include "kernels/kernels.h"
#include "simd/f32x4_math.h"

extern "C" void ml_k_silu_mul_rvv(float *g, const float *u, int n) { ml::f4::silu_mul(g, u, n); }
extern "C" void ml_k_add_rvv(float *y, const float *x, int n) { ml::f4::add(y, x, n); }
extern "C" void ml_k_exp_f32_rvv(float *y, const float *x, int n) { ml::f4::exp_f32(y, x, n); }
