// sse2 overrides of the element-wise kernels (references: kernels/scalar/elementwise.cc), all
// bit-identical: silu_mul with the SSE2 exp (simd/exp_sse2.h), add, exp_f32. Tails go through one
// zero-padded vector so every element sees the same arithmetic. With -DML_ASM=ON, add comes from
// add.S instead (kernels/x86/sse2/asm.cmake).
#include <emmintrin.h>

#include <cstring>

#include "kernels/kernels.h"
#include "simd/exp_sse2.h"

namespace {
// out[i] = f(a[i], b[i]) four at a time; the tail through a padded vector.
template <class F>
void map2(float *out, const float *a, const float *b, int n, F f) {
  int i = 0;
  for (; i + 4 <= n; i += 4) _mm_storeu_ps(out + i, f(_mm_loadu_ps(a + i), _mm_loadu_ps(b + i)));
  if (i < n) {
    alignas(16) float ta[4] = {}, tb[4] = {};
    std::memcpy(ta, a + i, sizeof(float) * size_t(n - i));
    std::memcpy(tb, b + i, sizeof(float) * size_t(n - i));
    _mm_store_ps(ta, f(_mm_load_ps(ta), _mm_load_ps(tb)));
    std::memcpy(out + i, ta, sizeof(float) * size_t(n - i));
  }
}
}  // namespace

extern "C" void ml_k_silu_mul_sse2(float *g, const float *u, int n) {
  map2(g, g, u, n, [](__m128 gv, __m128 uv) {
    const __m128 one = _mm_set1_ps(1.0f);
    const __m128 e = ml::simd::exp_sse2(_mm_sub_ps(_mm_setzero_ps(), gv));
    return _mm_mul_ps(_mm_mul_ps(gv, _mm_div_ps(one, _mm_add_ps(one, e))), uv);
  });
}

#if !defined(ML_ASM_add_sse2)
extern "C" void ml_k_add_sse2(float *y, const float *x, int n) {
  map2(y, y, x, n, [](__m128 yv, __m128 xv) { return _mm_add_ps(yv, xv); });
}
#endif

extern "C" void ml_k_exp_f32_sse2(float *y, const float *x, int n) {
  map2(y, x, x, n, [](__m128 xv, __m128) { return ml::simd::exp_sse2(xv); });
}
