// Vector exp with SSE2 intrinsics: the same algorithm and constants as simd/exp-inl.h
// (simd/exp.h), for the sse2 build, where Highway has no SSE2 target.
#pragma once
#include <emmintrin.h>

#include "simd/exp.h"

namespace ml::simd {

inline __m128 exp_sse2(__m128 x) {
  x = _mm_min_ps(_mm_max_ps(x, _mm_set1_ps(kExpLo)), _mm_set1_ps(kExpHi));
  // round to nearest: cvtps_epi32 rounds with the MXCSR mode (nearest-even by default, as Round)
  const __m128i ni = _mm_cvtps_epi32(_mm_mul_ps(x, _mm_set1_ps(kLog2e)));
  const __m128 n = _mm_cvtepi32_ps(ni);
  __m128 r = _mm_sub_ps(x, _mm_mul_ps(n, _mm_set1_ps(kLn2Hi)));
  r = _mm_sub_ps(r, _mm_mul_ps(n, _mm_set1_ps(kLn2Lo)));
  __m128 p = _mm_set1_ps(kExpC6);
  p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(kExpC5));
  p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(kExpC4));
  p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(kExpC3));
  p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(kExpC2));
  p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(1.0f));
  p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(1.0f));
  const __m128i n1 = _mm_srai_epi32(ni, 1), n2 = _mm_sub_epi32(ni, n1);
  const __m128i bias = _mm_set1_epi32(127);
  const __m128 s1 = _mm_castsi128_ps(_mm_slli_epi32(_mm_add_epi32(n1, bias), 23));
  const __m128 s2 = _mm_castsi128_ps(_mm_slli_epi32(_mm_add_epi32(n2, bias), 23));
  return _mm_mul_ps(_mm_mul_ps(p, s1), s2);
}

}  // namespace ml::simd
