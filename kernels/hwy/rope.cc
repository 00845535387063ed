// RoPE with Highway: pairs (v[2i], v[2i+1]) de-interleaved by LoadInterleaved2, rotated with
// separate multiplies and adds (no FMA), re-interleaved: bit-identical to kernels/scalar/rope.cc.
// Leftover pairs: the 4-lane layer's RoPE (simd/f32x4_math.h).
// Defines: ml_k_rope_hwy
#include "kernels/kernels.h"
#include "simd/f32x4_math.h"
#include "simd/hwy.h"

HWY_BEFORE_NAMESPACE();
namespace hwy {
namespace HWY_NAMESPACE {  // extern "C" functions keep their C names inside a namespace
namespace hn = hwy::HWY_NAMESPACE;

namespace {
void rotate(float *v, const float *cos_t, const float *sin_t, int head_dim, int n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d), half = size_t(head_dim) / 2;
  for (int h = 0; h < n; ++h, v += head_dim) {
    size_t i = 0;
    for (; i + N <= half; i += N) {
      hn::Vec<decltype(d)> e, o;
      hn::LoadInterleaved2(d, v + 2 * i, e, o);
      const auto c = hn::LoadU(d, cos_t + i), s = hn::LoadU(d, sin_t + i);
      const auto e2 = hn::Sub(hn::Mul(e, c), hn::Mul(o, s));
      const auto o2 = hn::Add(hn::Mul(e, s), hn::Mul(o, c));
      hn::StoreInterleaved2(e2, o2, d, v + 2 * i);
    }
    ml::f4::rope_head(v + 2 * i, cos_t + i, sin_t + i, int(2 * (half - i)));  // the last pairs
  }
}
}  // namespace

extern "C" void ml_k_rope_hwy(float *q, float *k, const float *cos_t, const float *sin_t, int head_dim, int n_heads,
                              int n_kv_heads) {
  rotate(q, cos_t, sin_t, head_dim, n_heads);
  rotate(k, cos_t, sin_t, head_dim, n_kv_heads);
}

}  // namespace HWY_NAMESPACE
}  // namespace hwy
HWY_AFTER_NAMESPACE();
