// matvec_q8 / matvec_q4 for 128-bit ARM vectors, written once for the neon set (vmull_s8 +
// vpadalq_s16, ARMv7 and AArch64) and the neon_dotprod set (vdotq_s32). Dot supplies the one
// ISA-specific step:
//   static int32x4_t Dot::block(int8x16_t w0, int8x16_t w1, int8x16_t x0, int8x16_t x1)
//     → four int32 lanes whose sum is the exact block dot Σ_j w_j·x_j (w0/x0: elements 0..15,
//       w1/x1: 16..31).
// Four rows share each x block load; hsum4x4 turns the four rows' lanes into one vector of block
// sums (lane = row) and Rows4 (kernels/arm/neon_common.h) adds t_b in the canonical order. Q4
// blocks are unpacked in registers (unpack_q4) and go through the same Dot::block.
// Contract and reference: kernels/scalar/matvec.cc. Tests: verify/kernel_checks.cc.
#pragma once
#include "kernels/arm/neon_common.h"
#include "kernels/kernels.h"

namespace ml::arm {

template <class Dot>
inline void matvec_q8(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  const int K = W->cols, nb = K / ML_QK;
  const int8_t *q = static_cast<const int8_t *>(W->q);
  const int8_t *xq = x->q;
  for_row_groups(r0, r1, [&](int r, int R, const int rows[4]) {
    const int8_t *w0 = q + size_t(rows[0]) * K, *w1 = q + size_t(rows[1]) * K, *w2 = q + size_t(rows[2]) * K,
                 *w3 = q + size_t(rows[3]) * K;
    const float *dw[4] = {W->d + size_t(rows[0]) * nb, W->d + size_t(rows[1]) * nb, W->d + size_t(rows[2]) * nb,
                          W->d + size_t(rows[3]) * nb};
    Rows4 acc(dw, x->d);
    acc.blocks(0, nb, [&](int b) {
      const size_t o = size_t(b) * ML_QK;
      const int8x16_t x0 = vld1q_s8(xq + o), x1 = vld1q_s8(xq + o + 16);
      return hsum4x4(Dot::block(vld1q_s8(w0 + o), vld1q_s8(w0 + o + 16), x0, x1),
                     Dot::block(vld1q_s8(w1 + o), vld1q_s8(w1 + o + 16), x0, x1),
                     Dot::block(vld1q_s8(w2 + o), vld1q_s8(w2 + o + 16), x0, x1),
                     Dot::block(vld1q_s8(w3 + o), vld1q_s8(w3 + o + 16), x0, x1));
    });
    acc.store(y + r, R);
  });
}

template <class Dot>
inline void matvec_q4(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  const int nb = W->cols / ML_QK;
  const size_t row_bytes = size_t(nb) * (ML_QK / 2);
  const uint8_t *q = static_cast<const uint8_t *>(W->q);
  const int8_t *xq = x->q;
  for_row_groups(r0, r1, [&](int r, int R, const int rows[4]) {
    const uint8_t *w[4] = {q + rows[0] * row_bytes, q + rows[1] * row_bytes, q + rows[2] * row_bytes,
                           q + rows[3] * row_bytes};
    const float *dw[4] = {W->d + size_t(rows[0]) * nb, W->d + size_t(rows[1]) * nb, W->d + size_t(rows[2]) * nb,
                          W->d + size_t(rows[3]) * nb};
    Rows4 acc(dw, x->d);
    acc.blocks(0, nb, [&](int b) {
      const int8x16_t x0 = vld1q_s8(xq + size_t(b) * ML_QK), x1 = vld1q_s8(xq + size_t(b) * ML_QK + 16);
      int32x4_t s[4];
      for (int i = 0; i < 4; ++i) {
        int8x16_t lo, hi;
        unpack_q4(w[i] + size_t(b) * (ML_QK / 2), lo, hi);
        s[i] = Dot::block(lo, hi, x0, x1);
      }
      return hsum4x4(s[0], s[1], s[2], s[3]);
    });
    acc.store(y + r, R);
  });
}

}  // namespace ml::arm
