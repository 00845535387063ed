// 256-bit helpers shared by the avx2 and avxvnni override sets (one block of 32 int8 per register).
#pragma once
#include <immintrin.h>

namespace ml::x86 {

// [Σ a, Σ b, Σ c, Σ d] of four int32x8 vectors.
inline __m128i hsum4x8(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
  return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

// One Q4_0 block (16 bytes) as 32 nibbles in elements order (low nibbles 0-15, high 16-31), 0..15.
inline __m256i nibbles_q4(const uint8_t *q) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(q));
  const __m128i m = _mm_set1_epi8(0x0F);
  return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_and_si128(v, m)), _mm_and_si128(_mm_srli_epi16(v, 4), m), 1);
}

}  // namespace ml::x86
