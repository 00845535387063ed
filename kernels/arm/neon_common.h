// NEON helpers shared by the ARM override sets (kernels/arm/neon, neon_dotprod, sve; ARMv7 and
// AArch64 alike). Every difference between ARMv7 NEON and AArch64 Advanced SIMD sits in one helper
// here; the kernels themselves are one source for both.
//
//   padd(a, b)        [a0+a1, a2+a3, b0+b1, b2+b3] (exact int32). AArch64: vpaddq_s32; ARMv7 has
//                     no 128-bit pairwise add: vpadd_s32 on the halves.
//   hsum4x4(a0..a3)   [Σa0, Σa1, Σa2, Σa3] of four int32x4 vectors, by two rounds of padd.
//   unpack_q4(v)      16 bytes of Q4_0 nibbles → (v & 0x0F) − 8 (lo) and (v >> 4) − 8 (hi) as int8.
//   Partials4         the float part of matvec_q8/q4 for four rows at once (lane i = row i), in the
//                     canonical order of kernels/kernels.h: t_b = (float(sumi_b) · dw_b) · dx_b,
//                     partial p_(b mod 4) += t_b in block order, y = (p0 + p1) + (p2 + p3).
//                     Separate multiplies and adds (vmulq/vaddq; -ffp-contract=off keeps them
//                     apart), so results are the scalar reference's bits.
//   for_blocks4       the block loop that feeds Partials4: unrolled by 4 so p_(b mod 4) is a
//                     register, not an indexed array.
//   for_row_groups    rows [r0, r1) four at a time (layout 0); store_rows writes a group's lanes.
//
// ARMv7 only: NEON arithmetic always flushes denormals (inputs and results below 2^-126) to zero,
// VFP does not. Partials4 therefore matches the reference bit for bit unless some t_b or partial
// sum falls below 2^-126 in magnitude, which needs block scales dw·dx below ~1e-33 (quantization
// scales of real models and of the tests are above 1e-5). The same holds for the Highway float
// kernels on ARMv7 (dot_f32, axpy_f32, add, rope, rmsnorm); exp, softmax and silu_mul, where
// underflow is ordinary, recompute the affected values with VFP (simd/exp-inl.h, kernels/hwy/).
#pragma once
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>

namespace ml::arm {

inline int32x4_t padd(int32x4_t a, int32x4_t b) {
#if defined(__aarch64__)
  return vpaddq_s32(a, b);
#else
  return vcombine_s32(vpadd_s32(vget_low_s32(a), vget_high_s32(a)), vpadd_s32(vget_low_s32(b), vget_high_s32(b)));
#endif
}

inline int32x4_t hsum4x4(int32x4_t a0, int32x4_t a1, int32x4_t a2, int32x4_t a3) {
  return padd(padd(a0, a1), padd(a2, a3));
}

// Q4_0 nibbles → int8 values: lo = (v & 0x0F) − 8, hi = (v >> 4) − 8 (docs/mlb-format.md).
inline int8x16_t q4_lo(uint8x16_t v) {
  return vsubq_s8(vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0x0F))), vdupq_n_s8(8));
}
inline int8x16_t q4_hi(uint8x16_t v) { return vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(v, 4)), vdupq_n_s8(8)); }

// The four partial sums of four rows (lane i = row i).
struct Partials4 {
  float32x4_t p[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};

  // p_j += (float(sumi) · dw) · dx, j = b mod 4 (a constant after for_blocks4 is inlined).
  inline void add(int j, int32x4_t sumi, float32x4_t dw, float32x4_t dx) {
    p[j] = vaddq_f32(p[j], vmulq_f32(vmulq_f32(vcvtq_f32_s32(sumi), dw), dx));
  }
  inline float32x4_t total() const { return vaddq_f32(vaddq_f32(p[0], p[1]), vaddq_f32(p[2], p[3])); }
};

// f(j, b) for b in [b0, e) in increasing order, j = b mod 4 as a literal (b0 must be a multiple of 4).
template <class F>
inline void for_blocks4(int b0, int e, F f) {
  int b = b0;
  for (; b + 4 <= e; b += 4) {
    f(0, b);
    f(1, b + 1);
    f(2, b + 2);
    f(3, b + 3);
  }
  if (b < e) f(0, b);  // the last (nb mod 4) blocks
  if (b + 1 < e) f(1, b + 1);
  if (b + 2 < e) f(2, b + 2);
}

// Block b's scales of four rows whose scale rows start at dw[0..3] (layout 0: one row apart).
inline float32x4_t gather_dw(const float *const dw[4], int b) {
  float32x4_t w = vld1q_dup_f32(dw[0] + b);
  w = vld1q_lane_f32(dw[1] + b, w, 1);
  w = vld1q_lane_f32(dw[2] + b, w, 2);
  return vld1q_lane_f32(dw[3] + b, w, 3);
}

// y[r + i] = lane i of v for the rows r + i in [r0, r1).
inline void store_rows(float *y, int r, float32x4_t v, int r0, int r1) {
  if (r >= r0 && r + 4 <= r1) {
    vst1q_f32(y + r, v);
    return;
  }
  float t[4];
  vst1q_f32(t, v);
  for (int i = 0; i < 4; ++i)
    if (r + i >= r0 && r + i < r1) y[r + i] = t[i];
}

// Layout 0 row groups of [r0, r1): four rows at a time; the last group of R < 4 rows repeats its
// last row in the unused lanes (same code, same arithmetic; store_rows writes only real rows).
// f(r, rows) gets the first row and the four lanes' row indices.
template <class F>
inline void for_row_groups(int r0, int r1, F f) {
  for (int r = r0; r < r1; r += 4) {
    const int last = r1 - 1;
    const int rows[4] = {r, r + 1 < last ? r + 1 : last, r + 2 < last ? r + 2 : last, r + 3 < last ? r + 3 : last};
    f(r, rows);
  }
}

}  // namespace ml::arm
