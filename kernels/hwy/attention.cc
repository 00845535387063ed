// Attention vector kernels with Highway. References: kernels/scalar/attention.cc.
//   dot_f32:  the canonical sum4 order through the 4-lane layer (simd/f32x4_math.h), bit-identical
//   axpy_f32: y += a·x, product then sum (no FMA), bit-identical
//   dot_f32_cols: positions in lanes (the keys element-major), four accumulators for the element
//     partials i mod 4, combined (a0 + a1) + (a2 + a3) lane for lane: each position's sum4, then
//     one IEEE division by den (on ARMv7 by VFP: NEON has none); two vectors of positions at a
//     time (eight add chains), then one, the last < N positions through the 4-lane layer's
//     dot_cols (the same bits)
//   axpy_f32_rows: y in registers (four full vectors, then one, then scalars) across the rows, each
//   element y += a[r]·x_r in row order, as axpy_f32 row after row
// Defines: ml_k_dot_f32_hwy ml_k_axpy_f32_hwy ml_k_dot_f32_cols_hwy ml_k_axpy_f32_rows_hwy
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

// s[0, N) = v / den, IEEE: Highway's Div on ARMv7 is a reciprocal estimate and Newton steps, so VFP
// divides there.
template <class D, class V>
HWY_INLINE void store_div(D d, V v, float den, float *s) {
#if HWY_ARCH_ARM_V7
  StoreU(v, d, s);
  for (size_t l = 0; l < Lanes(d); ++l) s[l] /= den;
#else
  StoreU(Div(v, Set(d, den)), d, s);
#endif
}

// One or two vectors of positions (G = 1, 2) from kt + p: the element partials of dot_f32_cols.
template <int G, class D>
HWY_INLINE void dot_cols_group(D d, float *s, const float *q, const float *kt, size_t ldk, int n, float den) {
  const size_t N = Lanes(d);
  auto a0 = Zero(d), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
  const int n4 = n & ~3;
  int i = 0;
  for (; i < n4; i += 4) {
    const float *k0 = kt + size_t(i) * ldk, *k1 = k0 + ldk, *k2 = k1 + ldk, *k3 = k2 + ldk;
    auto qv = Set(d, q[i]);
    a0 = Add(a0, Mul(qv, LoadU(d, k0)));
    if (G == 2) b0 = Add(b0, Mul(qv, LoadU(d, k0 + N)));
    qv = Set(d, q[i + 1]);
    a1 = Add(a1, Mul(qv, LoadU(d, k1)));
    if (G == 2) b1 = Add(b1, Mul(qv, LoadU(d, k1 + N)));
    qv = Set(d, q[i + 2]);
    a2 = Add(a2, Mul(qv, LoadU(d, k2)));
    if (G == 2) b2 = Add(b2, Mul(qv, LoadU(d, k2 + N)));
    qv = Set(d, q[i + 3]);
    a3 = Add(a3, Mul(qv, LoadU(d, k3)));
    if (G == 2) b3 = Add(b3, Mul(qv, LoadU(d, k3 + N)));
  }
  for (int j = 0; i < n; ++i, ++j) {  // the last 1-3 elements: partials 0, 1, 2
    const float *k0 = kt + size_t(i) * ldk;
    const auto qv = Set(d, q[i]);
    if (j == 0) {
      a0 = Add(a0, Mul(qv, LoadU(d, k0)));
      if (G == 2) b0 = Add(b0, Mul(qv, LoadU(d, k0 + N)));
    } else if (j == 1) {
      a1 = Add(a1, Mul(qv, LoadU(d, k0)));
      if (G == 2) b1 = Add(b1, Mul(qv, LoadU(d, k0 + N)));
    } else {
      a2 = Add(a2, Mul(qv, LoadU(d, k0)));
      if (G == 2) b2 = Add(b2, Mul(qv, LoadU(d, k0 + N)));
    }
  }
  store_div(d, Add(Add(a0, a1), Add(a2, a3)), den, s);
  if (G == 2) store_div(d, Add(Add(b0, b1), Add(b2, b3)), den, s + N);
}

extern "C" void ml_k_dot_f32_cols_hwy(float *s, const float *q, const float *kt, size_t ldk, int cols, int n,
                                      float den) {
  const ScalableTag<float> d;
  const int N = int(Lanes(d));
  int p = 0;
  for (; p + 2 * N <= cols; p += 2 * N) dot_cols_group<2>(d, s + p, q, kt + p, ldk, n, den);
  for (; p + N <= cols; p += N) dot_cols_group<1>(d, s + p, q, kt + p, ldk, n, den);
  if (p < cols) ml::f4::dot_cols(s + p, q, kt + p, ldk, cols - p, n, den);
}

extern "C" void ml_k_axpy_f32_rows_hwy(float *y, const float *a, const float *x, size_t ldx, int rows, int n) {
  const ScalableTag<float> d;
  const size_t N = Lanes(d);
  size_t j = 0;
  for (; j + 4 * N <= size_t(n); j += 4 * N) {
    auto y0 = LoadU(d, y + j), y1 = LoadU(d, y + j + N), y2 = LoadU(d, y + j + 2 * N), y3 = LoadU(d, y + j + 3 * N);
    for (int r = 0; r < rows; ++r) {
      const float *xr = x + size_t(r) * ldx + j;
      const auto av = Set(d, a[r]);
      y0 = Add(y0, Mul(av, LoadU(d, xr)));
      y1 = Add(y1, Mul(av, LoadU(d, xr + N)));
      y2 = Add(y2, Mul(av, LoadU(d, xr + 2 * N)));
      y3 = Add(y3, Mul(av, LoadU(d, xr + 3 * N)));
    }
    StoreU(y0, d, y + j);
    StoreU(y1, d, y + j + N);
    StoreU(y2, d, y + j + 2 * N);
    StoreU(y3, d, y + j + 3 * N);
  }
  for (; j + N <= size_t(n); j += N) {
    auto yv = LoadU(d, y + j);
    for (int r = 0; r < rows; ++r) yv = Add(yv, Mul(Set(d, a[r]), LoadU(d, x + size_t(r) * ldx + j)));
    StoreU(yv, d, y + j);
  }
  for (; j < size_t(n); ++j)
    for (int r = 0; r < rows; ++r) y[j] += a[r] * x[size_t(r) * ldx + j];
}

}  // namespace HWY_NAMESPACE
}  // namespace hwy
HWY_AFTER_NAMESPACE();
