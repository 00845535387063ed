// 256-bit helpers shared by the avx2 and avxvnni override sets (one block of 32 int8 per register).
#pragma once
#include <immintrin.h>

#include <cstring>

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

// 16 panel rows as two 256-bit registers (avx2, avxvnni; kernels/x86/panel_x86.h).
struct Width256 {
  static constexpr int kTokens = 2;
  struct Sums {
    __m256i v[2];
  };
  struct Acc {
    __m256 v[2];
  };
  static Acc zero() { return {{_mm256_setzero_ps(), _mm256_setzero_ps()}}; }
  static Acc fold(Acc a, const Sums &s, const float *d, float dx) {  // a + (cvt(s)·d)·dx, no FMA
    const __m256 vdx = _mm256_set1_ps(dx);
    for (int k = 0; k < 2; ++k)
      a.v[k] = _mm256_add_ps(a.v[k], _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(s.v[k]), _mm256_loadu_ps(d + 8 * k)), vdx));
    return a;
  }
  static Acc add(Acc a, const Acc &b) {
    for (int k = 0; k < 2; ++k) a.v[k] = _mm256_add_ps(a.v[k], b.v[k]);
    return a;
  }
  static void store(float *y, const Acc &a, int lo, int hi) {
    if (lo == 0 && hi == 16) {
      _mm256_storeu_ps(y, a.v[0]);
      _mm256_storeu_ps(y + 8, a.v[1]);
      return;
    }
    alignas(32) float t[16];
    _mm256_store_ps(t, a.v[0]);
    _mm256_store_ps(t + 8, a.v[1]);
    std::memcpy(y + lo, t + lo, sizeof(float) * size_t(hi - lo));
  }
};

// x quad u of a 32-byte block, broadcast to every 32-bit lane.
inline __m256i bcast_quad256(const int8_t *xb, int u) {
  int32_t v;
  std::memcpy(&v, xb + 4 * u, 4);
  return _mm256_set1_epi32(v);
}

}  // namespace ml::x86
