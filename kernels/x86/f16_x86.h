// The x86 family's binary16 → F32 widening, for kernels/format/f16.h (which includes it on every
// x86 build and wraps it: include that header, not this one). The same bits as the integer
// reference, f32_from_f16, for every half (verify/e2e_checks.cc checks all 65536):
//   widen16(dst, src)       16 halves → 16 floats (a panel's block scales in layout 2): AVX-512F
//                           (one vcvtph2ps to a 64-byte store), F16C (two), else SSE2 integer
//                           operations by hand; returns false, with dst unwritten, when SSE2 meets a
//                           group holding a subnormal half, an infinity or a NaN (the caller then
//                           takes the integer reference); the F16C/AVX-512 paths always return true.
//   load_f16(dst, src, n)   the leading halves it converts (16 at a time on AVX-512F, then 8 at a
//                           time on F16C; none on SSE2 alone), returned as a count: the caller
//                           converts the rest with the integer reference.
// No alignment needed.
#pragma once
#include <cstdint>

#if defined(__AVX512F__) || defined(__F16C__)
#include <immintrin.h>
#else
#include <emmintrin.h>
#endif

namespace ml::f16_isa {

// Internal linkage: each ISA's kernels keep their own copy (one shared inline symbol could be the
// AVX-512 one, linked into the SSE2 set of the same binary).
namespace {
inline bool widen16(float *dst, const uint16_t *src) {
#if defined(__AVX512F__)  // one 64-byte store, which the 64-byte load of the scales can forward from
  // (two 32-byte ones cannot be forwarded to it: a stall). maskz: GCC 12 warns on _mm512_cvtph_ps.
  _mm512_storeu_ps(dst, _mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src))));
#elif defined(__F16C__)  // every AVX2 build
  for (int i = 0; i < 16; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i))));
#else  // SSE2: widen16_int's arithmetic by hand (GCC's vector code moves more)
  const __m128i zero = _mm_setzero_si128(), h0 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src)),
                h1 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + 8));
  // A subnormal half, an infinity or a NaN: exponent 0 with a nonzero magnitude, or exponent 31.
  const __m128i m7c = _mm_set1_epi16(0x7C00), m7f = _mm_set1_epi16(0x7FFF);
  const auto odd = [&](__m128i h) {
    const __m128i e = _mm_and_si128(h, m7c), mag = _mm_and_si128(h, m7f);
    return _mm_or_si128(_mm_cmpeq_epi16(e, m7c),
                        _mm_andnot_si128(_mm_cmpeq_epi16(mag, zero), _mm_cmpeq_epi16(e, zero)));
  };
  if (_mm_movemask_epi8(_mm_or_si128(odd(h0), odd(h1)))) return false;
  const __m128i mag_mask = _mm_set1_epi32(0x7FFF0000), sign_mask = _mm_set1_epi32(int(0x80000000u)),
                bias = _mm_set1_epi32(0x38000000);
  const auto four = [&](float *d, __m128i x) {  // x: 4 halves in the high 16 bits of each lane
    const __m128i mag = _mm_srli_epi32(_mm_and_si128(x, mag_mask), 3);  // (h & 0x7FFF) << 13
    const __m128i bits = _mm_andnot_si128(_mm_cmpeq_epi32(mag, zero), _mm_add_epi32(mag, bias));
    _mm_storeu_ps(d, _mm_castsi128_ps(_mm_or_si128(bits, _mm_and_si128(x, sign_mask))));
  };
  four(dst, _mm_unpacklo_epi16(zero, h0));
  four(dst + 4, _mm_unpackhi_epi16(zero, h0));
  four(dst + 8, _mm_unpacklo_epi16(zero, h1));
  four(dst + 12, _mm_unpackhi_epi16(zero, h1));
#endif
  return true;
}
}  // namespace

inline int load_f16(float *dst, const uint16_t *src, int n) {
  int i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(src + i))));
#endif
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i))));
#endif
  (void)dst, (void)src, (void)n;
  return i;
}

}  // namespace ml::f16_isa
