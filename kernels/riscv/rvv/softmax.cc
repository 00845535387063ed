// Softmax in place, rvv override set: max, e = exp(x − max), s = sum4(e), x = e / s, the 4-lane body
// of simd/f32x4_math.h: bit-identical to kernels/scalar/softmax.cc.
#include "kernels/kernels.h"
#include "simd/f32x4_math.h"

extern "C" void ml_k_softmax_rvv(float *x, int n) { ml::f4::softmax(x, n); }
