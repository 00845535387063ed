// Element-wise kernels with Highway. References: kernels/scalar/elementwise.cc.
//   silu_mul: g = g · (1 / (1 + exp(−g))) · u, with the SIMD exp
//   add:      y += x (exact: one IEEE add per element, as the reference)
//   exp_f32:  the SIMD exp itself (simd/exp-inl.h)
// Tails run through one padded vector, so every element sees the same arithmetic.
// Defines: ml_k_silu_mul_hwy ml_k_add_hwy ml_k_exp_f32_hwy
#include <cstring>

#include "kernels/kernels.h"
#include "simd/exp.h"
#include "simd/hwy.h"

HWY_BEFORE_NAMESPACE();
namespace hwy {
namespace HWY_NAMESPACE {
#include "simd/exp-inl.h"

namespace {
// Applies f(vector of a, vector of b) → vector to n elements of a (and b), storing into out.
template <class F>
HWY_INLINE void map2(float *out, const float *a, const float *b, int n, F f) {
  const ScalableTag<float> d;
  const size_t N = Lanes(d), nv = size_t(n) - size_t(n) % N, tail = size_t(n) - nv;
  for (size_t j = 0; j < nv; j += N) StoreU(f(d, LoadU(d, a + j), LoadU(d, b + j)), d, out + j);
  if (tail) {
    HWY_ALIGN float ba[HWY_MAX_BYTES / sizeof(float)] = {}, bb[HWY_MAX_BYTES / sizeof(float)] = {};
    std::memcpy(ba, a + nv, tail * sizeof(float));
    std::memcpy(bb, b + nv, tail * sizeof(float));
    Store(f(d, Load(d, ba), Load(d, bb)), d, ba);
    std::memcpy(out + nv, ba, tail * sizeof(float));
  }
}
}  // namespace
namespace hn = hwy::HWY_NAMESPACE;

extern "C" void ml_k_silu_mul_hwy(float *g, const float *u, int n) {
#if HWY_ARCH_ARM_V7
  // ARMv7 NEON has no IEEE division and flushes the denormal sigmoid of g < -87.3 to zero: the
  // SIMD exp fills e = exp(-g) 64 elements at a time, VFP does the rest, as the reference.
  for (int j0 = 0; j0 < n; j0 += 64) {
    const int m = n - j0 < 64 ? n - j0 : 64;
    float e[64];
    hn::map2(e, g + j0, g + j0, m, [](auto d, auto gv, auto) { return hn::MlExp(d, hn::Neg(gv)); });
    for (int j = 0; j < m; ++j) {
      float v = g[j0 + j];
      v *= 1.0f / (1.0f + e[j]);
      g[j0 + j] = v * u[j0 + j];
    }
  }
#else
  hn::map2(g, g, u, n, [](auto d, auto gv, auto uv) {
    const auto one = hn::Set(d, 1.0f);
    const auto sig = hn::Div(one, hn::Add(one, hn::MlExp(d, hn::Neg(gv))));
    return hn::Mul(hn::Mul(gv, sig), uv);
  });
#endif
}

extern "C" void ml_k_add_hwy(float *y, const float *x, int n) {
  hn::map2(y, y, x, n, [](auto, auto yv, auto xv) { return hn::Add(yv, xv); });
}

extern "C" void ml_k_exp_f32_hwy(float *y, const float *x, int n) {
  hn::map2(y, x, x, n, [](auto d, auto xv, auto) { return hn::MlExp(d, xv); });
}

}  // namespace HWY_NAMESPACE
}  // namespace hwy
HWY_AFTER_NAMESPACE();
