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
// This header is the portable statement (integer operations only). The ISA paths live with their
// family's helpers and are picked by the build's flags: kernels/x86/f16_x86.h (SSE2, F16C,
// AVX-512F) on x86, kernels/arm/f16_neon.h on AArch64; each supplies f16_isa::widen16 and
// f16_isa::load_f16, which widen16 and kv_load_f16 below wrap. Other builds (ARMv7, WASM, RISC-V)
// use the portable forms alone.
// No alignment needed; n >= 0; reads n halves, writes n floats (or the reverse).
#pragma once
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include "kernels/x86/f16_x86.h"
#define ML_F16_ISA 1
#elif defined(__aarch64__) && defined(__ARM_NEON)
#include "kernels/arm/f16_neon.h"
#define ML_F16_ISA 1
#else
#define ML_F16_ISA 0
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
#if ML_F16_ISA
  if (!f16_isa::widen16(dst, src)) kv_load_f16_ref(dst, src, 16);  // SSE2: a group with a special half
#else
  widen16_int(dst, src);
#endif
}
}  // namespace

inline void kv_store_f16(uint16_t *dst, const float *src, int n) {
  for (int i = 0; i < n; ++i) dst[i] = f16_from_f32(src[i]);
}

inline void kv_load_f16(float *dst, const uint16_t *src, int n) {
#if ML_F16_ISA
  const int i = f16_isa::load_f16(dst, src, n);  // the leading halves the ISA converts
#else
  const int i = 0;
#endif
  kv_load_f16_ref(dst + i, src + i, n - i);
}

}  // namespace ml
