// sse2 overrides of the attention vector kernels (references: kernels/scalar/attention.cc),
// bit-identical: dot_f32 in the canonical sum4 order (one __m128 of partials), axpy_f32 as a
// multiply then an add per element.
#include <emmintrin.h>

#include "kernels/kernels.h"
#include "kernels/x86/sum4_sse.h"

extern "C" float ml_k_dot_f32_sse2(const float *a, const float *b, int n) { return ml::x86::sum4_dot(a, b, n); }

extern "C" void ml_k_axpy_f32_sse2(float *y, float a, const float *x, int n) {
  const __m128 av = _mm_set1_ps(a);
  int i = 0;
  for (; i + 4 <= n; i += 4) _mm_storeu_ps(y + i, _mm_add_ps(_mm_loadu_ps(y + i), _mm_mul_ps(av, _mm_loadu_ps(x + i))));
  for (; i < n; ++i) y[i] += a * x[i];
}
