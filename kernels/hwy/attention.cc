// Attention vector kernels with Highway. References: kernels/scalar/attention.cc.
//   dot_f32:  the canonical sum4 order (simd/sum4-inl.h), bit-identical to the reference
//   axpy_f32: y += a·x, product then sum (no FMA), bit-identical
#include <cstring>

#include "kernels/kernels.h"
#include "simd/hwy.h"

HWY_BEFORE_NAMESPACE();
namespace hwy {
namespace HWY_NAMESPACE {  // extern "C" functions keep their C names inside a namespace
namespace hn = hwy::HWY_NAMESPACE;
#include "simd/sum4-inl.h"

extern "C" float ml_k_dot_f32_hwy(const float *a, const float *b, int n) {
  const MlD4 d;
  auto acc = Zero(d);
  size_t j = 0;
  for (; j + 4 <= size_t(n); j += 4) acc = Add(acc, Mul(LoadU(d, a + j), LoadU(d, b + j)));
  if (j < size_t(n)) acc = Add(acc, Mul(MlLoadTail4(a, j, size_t(n)), MlLoadTail4(b, j, size_t(n))));
  return MlTotal4(acc);
}

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
