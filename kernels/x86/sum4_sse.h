// The canonical sum4 order (kernels/scalar/sum4.h) with SSE registers: a __m128 holds the four
// partial sums p0..p3. Shared by every x86 override set (SSE2 instructions only, so the sse2 build
// can use it; wider ISAs compile the same intrinsics to VEX encodings, same results).
#pragma once
#include <emmintrin.h>

#include <cstring>

namespace ml::x86 {

// (p0 + p1) + (p2 + p3)
inline float total4(__m128 p) {
  const __m128 odd = _mm_shuffle_ps(p, p, _MM_SHUFFLE(3, 3, 3, 1));  // p1 . p3 .
  const __m128 pairs = _mm_add_ps(p, odd);                           // p0+p1 . p2+p3 .
  return _mm_cvtss_f32(_mm_add_ss(pairs, _mm_movehl_ps(pairs, pairs)));
}

// The last n - i (< 4) floats at a + i, zero-padded, without reading past a + n.
inline __m128 load_tail4(const float *a, int i, int n) {
  alignas(16) float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  std::memcpy(t, a + i, sizeof(float) * static_cast<size_t>(n - i));
  return _mm_load_ps(t);
}

// sum4 of a[0..n) (a[i]·b[i] when b is given): four lanes in index order, zero-padded tail.
inline float sum4_dot(const float *a, const float *b, int n) {
  __m128 acc = _mm_setzero_ps();
  int i = 0;
  for (; i + 4 <= n; i += 4) acc = _mm_add_ps(acc, _mm_mul_ps(_mm_loadu_ps(a + i), _mm_loadu_ps(b + i)));
  if (i < n) acc = _mm_add_ps(acc, _mm_mul_ps(load_tail4(a, i, n), load_tail4(b, i, n)));
  return total4(acc);
}

}  // namespace ml::x86
