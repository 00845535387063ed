// Softmax in place with Highway: the SIMD exp (simd/exp-inl.h) full width, the sum in the canonical
// sum4 order (simd/f32x4_math.h), IEEE division: bit-identical to kernels/scalar/softmax.cc. Tail
// elements go through the same vector exp (one padded vector in a stack buffer).
// Defines: ml_k_softmax_hwy
#include <cstring>

#include "kernels/kernels.h"
#include "simd/exp.h"
#include "simd/f32x4_math.h"
#include "simd/hwy.h"

HWY_BEFORE_NAMESPACE();
namespace hwy {
namespace HWY_NAMESPACE {
#include "simd/exp-inl.h"
namespace hn = hwy::HWY_NAMESPACE;

extern "C" void ml_k_softmax_hwy(float *x, int n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d), nv = size_t(n) - size_t(n) % N, tail = size_t(n) - nv;
  float max_val = x[0];
  if (nv) {
    auto m = hn::LoadU(d, x);
    for (size_t j = N; j < nv; j += N) m = hn::Max(m, hn::LoadU(d, x + j));
    max_val = hn::GetLane(hn::MaxOfLanes(d, m));
  }
  for (size_t j = nv; j < size_t(n); ++j) max_val = x[j] > max_val ? x[j] : max_val;
  const auto mv = hn::Set(d, max_val);
  for (size_t j = 0; j < nv; j += N) hn::StoreU(hn::MlExp(d, hn::Sub(hn::LoadU(d, x + j), mv)), d, x + j);
  if (tail) {
    HWY_ALIGN float buf[HWY_MAX_BYTES / sizeof(float)] = {};
    std::memcpy(buf, x + nv, tail * sizeof(float));
    hn::Store(hn::MlExp(d, hn::Sub(hn::Load(d, buf), mv)), d, buf);
    std::memcpy(x + nv, buf, tail * sizeof(float));
  }
  const float total = ml::f4::sum(x, n);
#if HWY_ARCH_ARM_V7
  // ARMv7 NEON has no IEEE division (Highway's Div there is a reciprocal estimate + Newton
  // steps): divide with VFP, which is IEEE (the sum above is VFP too: simd/f32x4.h).
  for (int j = 0; j < n; ++j) x[j] /= total;
#else
  const auto inv = hn::Set(d, total);
  for (size_t j = 0; j < nv; j += N) hn::StoreU(hn::Div(hn::LoadU(d, x + j), inv), d, x + j);
  for (size_t j = nv; j < size_t(n); ++j) x[j] /= total;
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace hwy
HWY_AFTER_NAMESPACE();
