// Attention vector kernels with Highway. References: kernels/scalar/attention.cc.
//   dot_f32:  the canonical sum4 order through the 4-lane layer (simd/f32x4_math.h), bit-identical
//   axpy_f32: y += a·x, product then sum (no FMA), bit-identical
//   dot_f32_rows: four rows side by side through the 4-lane layer, each row dot_f32's sum4
//   axpy_f32_rows: y in registers (four full vectors, then one, then scalars) across the rows, each
//   element y += a[r]·x_r in row order, as axpy_f32 row after row
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

extern "C" void ml_k_dot_f32_rows_hwy(float *s, const float *q, const float *k, size_t ldk, int rows, int n) {
  ml::f4::dot_rows(s, q, k, ldk, rows, n);
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
