// Attention vector kernels with Highway. References: kernels/scalar/attention.cc.
//   dot_f32:  the canonical sum4 order through the 4-lane layer (simd/f32x4_math.h), bit-identical
//   axpy_f32: y += a·x, product then sum (no FMA), bit-identical
#include "kernels/kernels.h"
#include "simd/f32x4_math.h"
#include "simd/hwy.h"

HWY_BEFORE_NAMESPACE();
namespace hwy {
namespace HWY_NAMESPACE {  // extern "C" functions keep their C names inside a namespace
namespace hn = hwy::HWY_NAMESPACE;

extern "C" float ml_k_dot_f32_hwy(const float *a, const float *b, int n) { return ml::f4::dot(a, b, n); }

extern "C" void ml_k_axpy_f32_hwy(float *y, float a, const float *x, int n) {
  const ScalableTag<float> d;
  const size_t N = Lanes(d);
  const auto av = Set(d, a);
  size_t j = 0;
  for (; j + N <= size_t(n); j += N) StoreU(Add(LoadU(d, y + j), Mul(av, LoadU(d, x + j))), d, y + j);
  for (; j < size_t(n); ++j) y[j] += a * x[j];
}

}  // namespace HWY_NAMESPACE
}  // namespace hwy
HWY_AFTER_NAMESPACE();
