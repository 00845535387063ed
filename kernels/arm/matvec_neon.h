// matvec_q8 / matvec_q4 for 128-bit ARM vectors, written once for the neon set (vmull_s8 +
// vpadalq_s16, ARMv7 and AArch64) and the neon_dotprod set (vdotq_s32), both weight layouts.
// Dot supplies the ISA-specific steps:
//   static int32x4_t Dot::block(int8x16_t w0, int8x16_t w1, int8x16_t x0, int8x16_t x1)
//     layout 0: four int32 lanes whose sum is one row's exact block dot Σ_j w_j·x_j
//     (w0/x0: elements 0..15, w1/x1: 16..31)
//   Dot::X Dot::bcast(const int8_t *x); static int32x4_t Dot::quad(U u, const Dot::X &xb)
//     layout 1: xb holds the block's 8 groups of 4 activations, each broadcast to every lane;
//     u(k) (k = 0..7) returns 16 bytes of unit k: weights 4k..4k+3 of four consecutive rows, so
//     the result is the four rows' exact block sums, lane = row, with no horizontal step.
// Layout 0: four rows share each x block; hsum4x4 turns the four rows' lanes into one vector of
// block sums (lane = row). Layout 1 (16-row panels, docs/mlb-format.md): the block's x groups are
// broadcast once and feed the 16 rows as four quads; scales are contiguous (one vld1q per quad).
// Either way Partials4 (kernels/arm/neon_common.h) adds t_b in the canonical order. Q4 nibbles are
// unpacked in registers and go through the same Dot steps.
// Contract and reference: kernels/scalar/matvec.cc. Tests: verify/kernel_checks.cc.
#pragma once
#include <cstring>

#include "kernels/arm/neon_common.h"
#include "kernels/kernels.h"

namespace ml::arm {

// 4 activations (one 32-bit group) broadcast: the x operand of a lane-per-row dot.
inline int32_t x_group(const int8_t *x) {
  int32_t g;
  std::memcpy(&g, x, 4);
  return g;
}

// Layout 1: rows [r0, r1) from whole panels. Partials of the panel's 16 rows as four quads.
template <class Dot, bool Q4>
inline void matvec_panels(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  const int nb = W->cols / ML_QK;
  constexpr size_t kUnitBytes = 64, kUnits = Q4 ? 4 : 8;  // units per block of a panel
  const uint8_t *q = static_cast<const uint8_t *>(W->q);
  for (int p = r0 / ML_PANEL_ROWS; p * ML_PANEL_ROWS < r1; ++p) {
    Partials4 acc[4];
    for_blocks4(0, nb, [&](int j, int b) {
      const size_t pb = size_t(p) * nb + size_t(b);
      const uint8_t *units = q + pb * kUnits * kUnitBytes;
      const float *d = W->d + pb * ML_PANEL_ROWS;
      const typename Dot::X xb = Dot::bcast(x->q + size_t(b) * ML_QK);
      const float32x4_t dx = vld1q_dup_f32(x->d + b);
      for (int g = 0; g < 4; ++g) {
        const uint8_t *u0 = units + 16 * g;
        int32x4_t s;
        if constexpr (Q4)  // unit k & 3: low nibbles are weights 4k.., high nibbles 16 + 4k..
          s = Dot::quad([&](int k) { const uint8x16_t v = vld1q_u8(u0 + (k & 3) * kUnitBytes);
                                     return k < 4 ? q4_lo(v) : q4_hi(v); }, xb);
        else
          s = Dot::quad([&](int k) { return vld1q_s8(reinterpret_cast<const int8_t *>(u0) + k * kUnitBytes); }, xb);
        acc[g].add(j, s, vld1q_f32(d + 4 * g), dx);
      }
    });
    for (int g = 0; g < 4; ++g) store_rows(y, p * ML_PANEL_ROWS + 4 * g, acc[g].total(), r0, r1);
  }
}

template <class Dot>
inline void matvec_q8(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  if (W->layout == ML_LAYOUT_PANEL16) return matvec_panels<Dot, false>(y, W, x, r0, r1);
  const int K = W->cols, nb = K / ML_QK;
  const int8_t *q = static_cast<const int8_t *>(W->q);
  const int8_t *xq = x->q;
  for_row_groups(r0, r1, [&](int r, const int rows[4]) {
    const int8_t *w0 = q + size_t(rows[0]) * K, *w1 = q + size_t(rows[1]) * K, *w2 = q + size_t(rows[2]) * K,
                 *w3 = q + size_t(rows[3]) * K;
    const float *dw[4] = {W->d + size_t(rows[0]) * nb, W->d + size_t(rows[1]) * nb, W->d + size_t(rows[2]) * nb,
                          W->d + size_t(rows[3]) * nb};
    Partials4 acc;
    for_blocks4(0, nb, [&](int j, int b) {
      const size_t o = size_t(b) * ML_QK;
      const int8x16_t x0 = vld1q_s8(xq + o), x1 = vld1q_s8(xq + o + 16);
      const int32x4_t s = hsum4x4(Dot::block(vld1q_s8(w0 + o), vld1q_s8(w0 + o + 16), x0, x1),
                                  Dot::block(vld1q_s8(w1 + o), vld1q_s8(w1 + o + 16), x0, x1),
                                  Dot::block(vld1q_s8(w2 + o), vld1q_s8(w2 + o + 16), x0, x1),
                                  Dot::block(vld1q_s8(w3 + o), vld1q_s8(w3 + o + 16), x0, x1));
      acc.add(j, s, gather_dw(dw, b), vld1q_dup_f32(x->d + b));
    });
    store_rows(y, r, acc.total(), r0, r1);
  });
}

template <class Dot>
inline void matvec_q4(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  if (W->layout == ML_LAYOUT_PANEL16) return matvec_panels<Dot, true>(y, W, x, r0, r1);
  const int nb = W->cols / ML_QK;
  const size_t row_bytes = size_t(nb) * (ML_QK / 2);
  const uint8_t *q = static_cast<const uint8_t *>(W->q);
  const int8_t *xq = x->q;
  for_row_groups(r0, r1, [&](int r, const int rows[4]) {
    const uint8_t *w[4] = {q + rows[0] * row_bytes, q + rows[1] * row_bytes, q + rows[2] * row_bytes,
                           q + rows[3] * row_bytes};
    const float *dw[4] = {W->d + size_t(rows[0]) * nb, W->d + size_t(rows[1]) * nb, W->d + size_t(rows[2]) * nb,
                          W->d + size_t(rows[3]) * nb};
    Partials4 acc;
    for_blocks4(0, nb, [&](int j, int b) {
      const int8x16_t x0 = vld1q_s8(xq + size_t(b) * ML_QK), x1 = vld1q_s8(xq + size_t(b) * ML_QK + 16);
      int32x4_t s[4];
      for (int i = 0; i < 4; ++i) {
        const uint8x16_t v = vld1q_u8(w[i] + size_t(b) * (ML_QK / 2));
        s[i] = Dot::block(q4_lo(v), q4_hi(v), x0, x1);
      }
      acc.add(j, hsum4x4(s[0], s[1], s[2], s[3]), gather_dw(dw, b), vld1q_dup_f32(x->d + b));
    });
    store_rows(y, r, acc.total(), r0, r1);
  });
}

}  // namespace ml::arm
