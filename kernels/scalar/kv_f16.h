// The F16 KV cache's conversions (ml_options.kv_type = ML_KV_F16), one definition for every build.
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
// No alignment needed; n >= 0; reads n halves, writes n floats (or the reverse).
#pragma once
#include <cstdint>
#include <cstring>

#if defined(__AVX512F__) || defined(__F16C__)
#include <immintrin.h>
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

inline void kv_store_f16(uint16_t *dst, const float *src, int n) {
  for (int i = 0; i < n; ++i) dst[i] = f16_from_f32(src[i]);
}

// The integer reference of kv_load_f16 (the tests compare the build's against it).
inline void kv_load_f16_ref(float *dst, const uint16_t *src, int n) {
  for (int i = 0; i < n; ++i) dst[i] = f32_from_f16(src[i]);
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
