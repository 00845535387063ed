// sse2 override: quantize_q8. Per block: max |x| (andnot sign), id = 127/amax, then
// trunc(x·id + copysign(0.5, x)) with cvttps, saturating packs and a clamp to ±127 — the exact
// float operations of kernels/scalar/quantize.cc, so q and d are bit-identical (a NaN becomes
// −127 as in the reference). The block sums s come from the clamped int16 values (pmaddwd by 1).
// dequantize_q8: 16 quants sign-extended (unpack with themselves, arithmetic shifts), cvtdq2ps
// (exact) and one mulps by the block's scale: the reference's one product per element.
// Defines: ml_k_quantize_q8_sse2 ml_k_dequantize_q8_sse2
#include <emmintrin.h>

#include "kernels/kernels.h"

extern "C" void ml_k_quantize_q8_sse2(ml_qact *out, const float *x, int k) {
  const __m128 sign = _mm_set1_ps(-0.0f), half = _mm_set1_ps(0.5f);
  for (int b = 0; b < k / ML_QK; ++b) {
    const float *xb = x + b * ML_QK;
    __m128 v[8], m = _mm_setzero_ps();
    for (int j = 0; j < 8; ++j) {
      v[j] = _mm_loadu_ps(xb + 4 * j);
      m = _mm_max_ps(m, _mm_andnot_ps(sign, v[j]));
    }
    m = _mm_max_ps(m, _mm_shuffle_ps(m, m, _MM_SHUFFLE(1, 0, 3, 2)));
    m = _mm_max_ps(m, _mm_shuffle_ps(m, m, _MM_SHUFFLE(2, 3, 0, 1)));
    const float amax = _mm_cvtss_f32(m);
    int8_t *qb = out->q + b * ML_QK;
    if (!(amax >= ML_QUANT_TINY)) {  // a zero block (or NaN): the reference quantizes it
      ml_quantize_row_q8_0(qb, out->d + b, xb, ML_QK);
      ml_block_sums_q8(out->s + b, qb, ML_QK);
      continue;
    }
    out->d[b] = amax / 127.0f;
    const __m128 id = _mm_set1_ps(127.0f / amax);
    __m128i i32[8];
    for (int j = 0; j < 8; ++j)
      i32[j] = _mm_cvttps_epi32(_mm_add_ps(_mm_mul_ps(v[j], id), _mm_or_ps(_mm_and_ps(v[j], sign), half)));
    const __m128i lo = _mm_set1_epi16(-127), hi = _mm_set1_epi16(127), ones = _mm_set1_epi16(1);
    __m128i sum = _mm_setzero_si128();
    for (int j = 0; j < 8; j += 4) {
      const __m128i a = _mm_min_epi16(_mm_max_epi16(_mm_packs_epi32(i32[j], i32[j + 1]), lo), hi);
      const __m128i c = _mm_min_epi16(_mm_max_epi16(_mm_packs_epi32(i32[j + 2], i32[j + 3]), lo), hi);
      _mm_storeu_si128(reinterpret_cast<__m128i *>(qb + 4 * j), _mm_packs_epi16(a, c));
      sum = _mm_add_epi32(sum, _mm_add_epi32(_mm_madd_epi16(a, ones), _mm_madd_epi16(c, ones)));
    }
    sum = _mm_add_epi32(sum, _mm_shuffle_epi32(sum, _MM_SHUFFLE(1, 0, 3, 2)));
    sum = _mm_add_epi32(sum, _mm_shuffle_epi32(sum, _MM_SHUFFLE(2, 3, 0, 1)));
    out->s[b] = _mm_cvtsi128_si32(sum);
  }
  out->n = k;
}

extern "C" void ml_k_dequantize_q8_sse2(float *y, const int8_t *q, const float *d, int n) {
  for (int b = 0; b < n / ML_QK; ++b) {
    const __m128 scale = _mm_set1_ps(d[b]);
    for (int j = 0; j < ML_QK; j += 16) {
      const int at = b * ML_QK + j;
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(q + at));
      const __m128i lo = _mm_srai_epi16(_mm_unpacklo_epi8(v, v), 8), hi = _mm_srai_epi16(_mm_unpackhi_epi8(v, v), 8);
      const __m128i w[4] = {_mm_srai_epi32(_mm_unpacklo_epi16(lo, lo), 16), _mm_srai_epi32(_mm_unpackhi_epi16(lo, lo), 16),
                            _mm_srai_epi32(_mm_unpacklo_epi16(hi, hi), 16), _mm_srai_epi32(_mm_unpackhi_epi16(hi, hi), 16)};
      for (int k = 0; k < 4; ++k) _mm_storeu_ps(y + at + 4 * k, _mm_mul_ps(_mm_cvtepi32_ps(w[k]), scale));
    }
  }
}
