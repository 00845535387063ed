// IEEE binary16 conversions, one definition for every build: the F16 KV cache's
// (ml_options.kv_type = ML_KV_F16) and the binary16 block scales of weight layout 2.
//   kv_store_f16: F32 → IEEE binary16, round to nearest, ties to even, by integer operations only
//     (the same code on every ISA, so every build stores the same bits): values ≥ 65520 in magnitude
//     become ±inf, values below 2^-24 / 2 become ±0, halfway cases go to the even half; a NaN
//     becomes a quiet NaN (sign and the top 9 payload bits kept, quiet bit set), so the cache never
//     holds a signalling NaN.
//   kv_load_f16: binary16 → F32, exact (every half is a float): subnormals normalized, ±inf, NaN
//     quiet with its payload. The integer form is the reference; AVX-512F / F16C (vcvtph2ps) and
//     AArch64 NEON (fcvtl) compute the same bits, and verify/e2e_checks.cc compares them on all
//     65536 inputs. Attention then runs the F32 path's float order on the converted rows, so an
//     F16 cache gives the same logits on every build and thread count.
//   widen16: 16 halves → 16 floats, a panel's block scales in layout 2 (docs/mlb-format.md), the
//     same bits as f32_from_f16 for every half: AVX-512F / F16C / AArch64 NEON where the build has
//     them, else integer operations (SSE2 by hand; ARMv7, WASM, RISC-V: widen16_int).
//     verify/e2e_checks.cc checks all 65536 halves, verify/kernel_checks.cc every set's kernels
//     with them as scales.
// No alignment needed; n >= 0; reads n halves, writes n floats (or the reverse).
#pragma once
#include <cstdint>
#include <cstring>

#if defined(__AVX512F__) || defined(__F16C__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#endif

namespace ml {

inline uint16_t f16_from_f32(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u, a = x & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return uint16_t(sign | 0x7E00u | ((a >> 13) & 0x1FFu));  // NaN, quiet
  if (a >= 0x38800000u) {                        // ≥ 2^-14: a normal half, or inf on overflow
    const uint32_t h = a - 0x38000000u;          // exponent rebiased 127 → 15
    const uint32_t r = (h + 0xFFFu + ((h >> 13) & 1u)) >> 13;  // ties to even; a carry bumps the exponent
    return uint16_t(sign | (r >= 0x7C00u ? 0x7C00u : r));
  }
  const uint32_t e = a >> 23;                    // a half subnormal (units of 2^-24), or zero
  if (e < 102) return uint16_t(sign);            // below 2^-25: rounds to zero
  const uint32_t m = (a & 0x7FFFFFu) | 0x800000u, shift = 126 - e;  // 14..24
  const uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
  return uint16_t(sign | (q + (rem > half || (rem == half && (q & 1u)) ? 1u : 0u)));
}

inline float f32_from_f16(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu;
  uint32_t m = h & 0x3FFu, bits;
  if (e == 31) {
    bits = sign | 0x7F800000u | (m << 13) | (m ? 0x400000u : 0u);
  } else if (e != 0) {
    bits = sign | ((e + 112) << 23) | (m << 13);
  } else if (m == 0) {
    bits = sign;
  } else {  // subnormal m·2^-24: normalize
    uint32_t E = 113;
    while (!(m & 0x400u)) m <<= 1, --E;
    bits = sign | (E << 23) | ((m & 0x3FFu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// The integer reference of kv_load_f16 (the tests compare the build's against it).
inline void kv_load_f16_ref(float *dst, const uint16_t *src, int n) {
  for (int i = 0; i < n; ++i) dst[i] = f32_from_f16(src[i]);
}

// widen16's portable form, integer operations only, on GCC/Clang vector types (SSE2, NEON, WASM
// SIMD128 registers; GCC does not vectorize the scalar loop): a normal half (or ±0) is its bits
// moved and rebiased; a group of 16 holding a subnormal half, an infinity or a NaN (rare as a
// scale) takes the integer reference for each of its 16.
inline void widen16_int(float *dst, const uint16_t *src) {
  typedef uint32_t U32x4 __attribute__((vector_size(16)));
  typedef uint16_t U16x4 __attribute__((vector_size(8)));
  U32x4 bits[4], special = {0, 0, 0, 0};
  for (int k = 0; k < 4; ++k) {
    U16x4 h16;
    std::memcpy(&h16, src + 4 * k, sizeof h16);
    const U32x4 h = __builtin_convertvector(h16, U32x4), e = h & 0x7C00u, mag = h & 0x7FFFu;
    special |= U32x4(e == 0x7C00u) | (U32x4(e == 0u) & U32x4(mag != 0u));
    bits[k] = ((h & 0x8000u) << 16) | (((mag << 13) + 0x38000000u) & U32x4(mag != 0u));
  }
  if (special[0] | special[1] | special[2] | special[3]) {
    kv_load_f16_ref(dst, src, 16);
    return;
  }
  std::memcpy(dst, bits, sizeof bits);
}

// Internal linkage: each ISA's kernels keep their own copy (one shared inline symbol could be the
// AVX-512 one, linked into the SSE2 set of the same binary).
namespace {
inline void widen16(float *dst, const uint16_t *src) {
#if defined(__AVX512F__)  // one 64-byte store, which the 64-byte load of the scales can forward from
  // (two 32-byte ones cannot be forwarded to it: a stall). maskz: GCC 12 warns on _mm512_cvtph_ps.
  _mm512_storeu_ps(dst, _mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src))));
#elif defined(__F16C__)  // every AVX2 build
  for (int i = 0; i < 16; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i))));
#elif defined(__aarch64__) && defined(__ARM_NEON)
  for (int i = 0; i < 16; i += 4) vst1q_f32(dst + i, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(src + i))));
#elif defined(__SSE2__)  // widen16_int's arithmetic by hand (GCC's vector code moves more)
  const __m128i zero = _mm_setzero_si128(), h0 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src)),
                h1 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + 8));
  // A subnormal half, an infinity or a NaN: exponent 0 with a nonzero magnitude, or exponent 31.
  const __m128i m7c = _mm_set1_epi16(0x7C00), m7f = _mm_set1_epi16(0x7FFF);
  const auto odd = [&](__m128i h) {
    const __m128i e = _mm_and_si128(h, m7c), mag = _mm_and_si128(h, m7f);
    return _mm_or_si128(_mm_cmpeq_epi16(e, m7c),
                        _mm_andnot_si128(_mm_cmpeq_epi16(mag, zero), _mm_cmpeq_epi16(e, zero)));
  };
  if (_mm_movemask_epi8(_mm_or_si128(odd(h0), odd(h1)))) {
    kv_load_f16_ref(dst, src, 16);
    return;
  }
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
#else
  widen16_int(dst, src);
#endif
}
}  // namespace

inline void kv_store_f16(uint16_t *dst, const float *src, int n) {
  for (int i = 0; i < n; ++i) dst[i] = f16_from_f32(src[i]);
}

inline void kv_load_f16(float *dst, const uint16_t *src, int n) {
  int i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(src + i))));
#endif
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i))));
#endif
#if defined(__aarch64__) && defined(__ARM_NEON)
  for (; i + 4 <= n; i += 4) vst1q_f32(dst + i, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(src + i))));
#endif
  kv_load_f16_ref(dst + i, src + i, n - i);
}

}  // namespace ml
