// ml::stream_read_sum (simd/stream_read.h), one branch per architecture's widest plain load.
#include "simd/stream_read.h"

#include "simd/prefetch.h"

#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#elif defined(__ARM_NEON)
#include <arm_neon.h>
#endif

namespace ml {

uint64_t stream_read_sum(const uint8_t *p, size_t n) {
#if defined(__SSE2__)
  __m128i a = _mm_setzero_si128(), b = a, c = a, d = a;
  for (size_t i = 0; i + 64 <= n; i += 64) {
    prefetch(p + i + kPrefetchBytes);
    a = _mm_add_epi64(a, _mm_load_si128(reinterpret_cast<const __m128i *>(p + i)));
    b = _mm_add_epi64(b, _mm_load_si128(reinterpret_cast<const __m128i *>(p + i + 16)));
    c = _mm_add_epi64(c, _mm_load_si128(reinterpret_cast<const __m128i *>(p + i + 32)));
    d = _mm_add_epi64(d, _mm_load_si128(reinterpret_cast<const __m128i *>(p + i + 48)));
  }
  alignas(16) uint64_t t[2];
  _mm_store_si128(reinterpret_cast<__m128i *>(t), _mm_add_epi64(_mm_add_epi64(a, b), _mm_add_epi64(c, d)));
  return t[0] + t[1];
#elif defined(__ARM_NEON)
  uint64x2_t a = vdupq_n_u64(0), b = a, c = a, d = a;
  for (size_t i = 0; i + 64 <= n; i += 64) {
    prefetch(p + i + kPrefetchBytes);
    a = vaddq_u64(a, vld1q_u64(reinterpret_cast<const uint64_t *>(p + i)));
    b = vaddq_u64(b, vld1q_u64(reinterpret_cast<const uint64_t *>(p + i + 16)));
    c = vaddq_u64(c, vld1q_u64(reinterpret_cast<const uint64_t *>(p + i + 32)));
    d = vaddq_u64(d, vld1q_u64(reinterpret_cast<const uint64_t *>(p + i + 48)));
  }
  const uint64x2_t s = vaddq_u64(vaddq_u64(a, b), vaddq_u64(c, d));
  return vgetq_lane_u64(s, 0) + vgetq_lane_u64(s, 1);
#else
  uint64_t a = 0, b = 0, c = 0, d = 0;
  for (size_t i = 0; i + 32 <= n; i += 32) {
    if (i % 64 == 0) prefetch(p + i + kPrefetchBytes);
    uint64_t w[4];
    std::memcpy(w, p + i, 32);
    a += w[0];
    b += w[1];
    c += w[2];
    d += w[3];
  }
  return a + b + c + d;
#endif
}

}  // namespace ml
