// sse2 override: softmax in place: max, e = exp(x − max) with the SSE2 exp (simd/exp_sse2.h, the
// same algorithm as every ISA), s = sum4(e), x = e / s: bit-identical to kernels/scalar/softmax.cc.
#include <emmintrin.h>

#include "kernels/kernels.h"
#include "kernels/x86/sum4_sse.h"
#include "simd/exp_sse2.h"

extern "C" void ml_k_softmax_sse2(float *x, int n) {
  float max_val = x[0];
  for (int i = 1; i < n; ++i) max_val = x[i] > max_val ? x[i] : max_val;
  const __m128 m = _mm_set1_ps(max_val);
  __m128 acc = _mm_setzero_ps();
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m128 e = ml::simd::exp_sse2(_mm_sub_ps(_mm_loadu_ps(x + i), m));
    _mm_storeu_ps(x + i, e);
    acc = _mm_add_ps(acc, e);
  }
  if (i < n) {
    alignas(16) float t[4];
    _mm_store_ps(t, ml::simd::exp_sse2(_mm_sub_ps(ml::x86::load_tail4(x, i, n), m)));
    for (int j = i; j < n; ++j) x[j] = t[j - i];
    acc = _mm_add_ps(acc, ml::x86::load_tail4(x, i, n));
  }
  const __m128 s = _mm_set1_ps(ml::x86::total4(acc));
  for (i = 0; i + 4 <= n; i += 4) _mm_storeu_ps(x + i, _mm_div_ps(_mm_loadu_ps(x + i), s));
  for (; i < n; ++i) x[i] /= _mm_cvtss_f32(s);
}
