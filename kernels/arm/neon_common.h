// NEON helpers shared by the ARM override sets (kernels/arm/neon, neon_dotprod, sve; ARMv7 and
// AArch64 alike). Every difference between ARMv7 NEON and AArch64 Advanced SIMD sits in one helper
// here; the kernels themselves are one source for both.
//
//   hsum4x4(a0..a3)   [Σa0, Σa1, Σa2, Σa3] of four int32x4 vectors (exact). AArch64: vpaddq_s32;
//                     ARMv7 has no 128-bit pairwise add (nor vaddvq): vpadd_s32 on halves.
//   unpack_q4(q)      one Q4_0 block (16 bytes) → its 32 int8 values: (q & 0x0F) − 8 is elements
//                     0..15, (q >> 4) − 8 elements 16..31 (docs/mlb-format.md).
//   Rows4             the float part of matvec_q8/q4 for four rows at once (lane i = row i), in the
//                     canonical order of kernels/kernels.h: t_b = (float(sumi_b) · dw_b) · dx_b,
//                     partial sum p_(b mod 4) += t_b in block order, y = (p0 + p1) + (p2 + p3).
//                     Separate multiplies and adds (vmulq/vaddq; -ffp-contract=off keeps them
//                     apart), so AArch64 results are the scalar reference's bits.
//
// ARMv7 only: NEON arithmetic always flushes denormals (inputs and results below 2^-126) to zero,
// VFP does not. Rows4 therefore matches the reference bit for bit unless some t_b or partial sum
// falls below 2^-126 in magnitude, which needs block scales dw·dx below ~1e-33 (quantization scales
// of real models and of the tests are above 1e-5). The same holds for the Highway float kernels on
// ARMv7 (dot_f32, axpy_f32, add, rope, rmsnorm); exp, softmax and silu_mul, where underflow is
// ordinary, recompute the affected values with VFP (simd/exp-inl.h, kernels/hwy/).
#pragma once
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>

namespace ml::arm {

inline int32x4_t hsum4x4(int32x4_t a0, int32x4_t a1, int32x4_t a2, int32x4_t a3) {
#if defined(__aarch64__)
  return vpaddq_s32(vpaddq_s32(a0, a1), vpaddq_s32(a2, a3));
#else
  const int32x2_t s0 = vpadd_s32(vget_low_s32(a0), vget_high_s32(a0));
  const int32x2_t s1 = vpadd_s32(vget_low_s32(a1), vget_high_s32(a1));
  const int32x2_t s2 = vpadd_s32(vget_low_s32(a2), vget_high_s32(a2));
  const int32x2_t s3 = vpadd_s32(vget_low_s32(a3), vget_high_s32(a3));
  return vcombine_s32(vpadd_s32(s0, s1), vpadd_s32(s2, s3));
#endif
}

// One Q4_0 block: lo = elements 0..15, hi = elements 16..31, each nibble − 8.
inline void unpack_q4(const uint8_t *q, int8x16_t &lo, int8x16_t &hi) {
  const uint8x16_t b = vld1q_u8(q);
  const int8x16_t eight = vdupq_n_s8(8);
  lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(b, vdupq_n_u8(0x0F))), eight);
  hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(b, 4)), eight);
}

// The float part of a quantized matvec for four rows. dw[i] points at lane i's row of block scales,
// dx at the activation's; blocks(b, e, sums) adds blocks [b, e), b a multiple of 4, where sums(j)
// returns block j's exact int32 sums of the four rows. Call blocks() with increasing ranges.
class Rows4 {
 public:
  Rows4(const float *const dw[4], const float *dx) : dw_{dw[0], dw[1], dw[2], dw[3]}, dx_(dx) {
    for (float32x4_t &p : p_) p = vdupq_n_f32(0.0f);
  }

  template <class Sums>
  inline void blocks(int b, int e, Sums sums) {
    for (; b + 4 <= e; b += 4) {
      add(0, b, sums(b));
      add(1, b + 1, sums(b + 1));
      add(2, b + 2, sums(b + 2));
      add(3, b + 3, sums(b + 3));
    }
    if (b < e) add(0, b, sums(b));  // the last (nb mod 4) blocks of a row
    if (b + 1 < e) add(1, b + 1, sums(b + 1));
    if (b + 2 < e) add(2, b + 2, sums(b + 2));
  }

  // y[0..R) = (p0 + p1) + (p2 + p3) of lanes 0..R-1 (R in 1..4).
  inline void store(float *y, int R) const {
    const float32x4_t t = vaddq_f32(vaddq_f32(p_[0], p_[1]), vaddq_f32(p_[2], p_[3]));
    if (R == 4) {
      vst1q_f32(y, t);
      return;
    }
    vst1q_lane_f32(y, t, 0);
    if (R > 1) vst1q_lane_f32(y + 1, t, 1);
    if (R > 2) vst1q_lane_f32(y + 2, t, 2);
  }

 private:
  // p_j += (float(sumi) · dw_b) · dx_b, lane i with row i's scale of block b.
  inline void add(int j, int b, int32x4_t sumi) {
    float32x4_t w = vld1q_dup_f32(dw_[0] + b);
    w = vld1q_lane_f32(dw_[1] + b, w, 1);
    w = vld1q_lane_f32(dw_[2] + b, w, 2);
    w = vld1q_lane_f32(dw_[3] + b, w, 3);
    const float32x4_t t = vmulq_f32(vmulq_f32(vcvtq_f32_s32(sumi), w), vld1q_dup_f32(dx_ + b));
    p_[j] = vaddq_f32(p_[j], t);
  }

  const float *dw_[4];
  const float *dx_;
  float32x4_t p_[4];
};

// Row groups of a matvec over rows [r0, r1): four rows at a time; the last group of R < 4 rows
// repeats its last row in the unused lanes (same code, same arithmetic; only R lanes are stored).
// f(r, R, rows) gets the first row and the four lanes' row indices.
template <class F>
inline void for_row_groups(int r0, int r1, F f) {
  for (int r = r0; r < r1; r += 4) {
    const int R = r1 - r < 4 ? r1 - r : 4;
    const int rows[4] = {r, r + (R > 1 ? 1 : R - 1), r + (R > 2 ? 2 : R - 1), r + (R > 3 ? 3 : R - 1)};
    f(r, R, rows);
  }
}

}  // namespace ml::arm
