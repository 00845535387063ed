// RMS norm with Highway. Reference and contract: kernels/scalar/rmsnorm.cc (o may alias x).
// ss in the canonical sum4 order (simd/f32x4_math.h), o = w·(ss·x) per element: bit-identical to
// the reference.
// Defines: ml_k_rmsnorm_hwy
#include <cmath>

#include "kernels/kernels.h"
#include "simd/f32x4_math.h"
#include "simd/hwy.h"

HWY_BEFORE_NAMESPACE();
namespace hwy {
namespace HWY_NAMESPACE {  // extern "C" functions keep their C names inside a namespace
namespace hn = hwy::HWY_NAMESPACE;

extern "C" void ml_k_rmsnorm_hwy(float *o, const float *x, const float *w, int n, float eps) {
  float ss = ml::f4::dot(x, x, n);
  ss /= float(n);
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d), nv = size_t(n) - size_t(n) % N;
  ss += eps;
  ss = 1.0f / std::sqrt(ss);
  const auto s = hn::Set(d, ss);
  for (size_t j = 0; j < nv; j += N) hn::StoreU(hn::Mul(hn::LoadU(d, w + j), hn::Mul(s, hn::LoadU(d, x + j))), d, o + j);
  for (size_t j = nv; j < size_t(n); ++j) o[j] = w[j] * (ss * x[j]);
}

}  // namespace HWY_NAMESPACE
}  // namespace hwy
HWY_AFTER_NAMESPACE();
