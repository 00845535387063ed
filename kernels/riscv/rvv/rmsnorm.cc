// RMS norm, rvv override set: ss = sum4(x·x), then o = w·(ss·x), the 4-lane body of simd/f32x4_math.h:
// bit-identical to kernels/scalar/rmsnorm.cc. o may alias x.
#include "kernels/kernels.h"
#include "simd/f32x4_math.h"

extern "C" void ml_k_rmsnorm_rvv(float *o, const float *x, const float *w, int n, float eps) {
  ml::f4::rmsnorm(o, x, w, n, eps);
}
