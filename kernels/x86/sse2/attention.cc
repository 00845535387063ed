// Attention vector kernels, sse2 override set: dot_f32 (sum4 of a·b) and axpy_f32 (y += a·x, product then
// sum), the 4-lane bodies of simd/f32x4_math.h: bit-identical to kernels/scalar/attention.cc.
#include "kernels/kernels.h"
#include "simd/f32x4_math.h"

extern "C" float ml_k_dot_f32_sse2(const float *a, const float *b, int n) { return ml::f4::dot(a, b, n); }
extern "C" void ml_k_axpy_f32_sse2(float *y, float a, const float *x, int n) { ml::f4::axpy(y, a, x, n); }
