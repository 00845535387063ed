// matvec_q8 / matvec_q4, rvv override set (RISC-V Vector 1.0, vector-length agnostic).
//   y[r] = sum4 over blocks b of t_b = (float(sumi_b) · dw[r,b]) · dx[b],  r in [r0, r1)
// sumi_b is the exact int32 dot product of a block, from widening multiplies (vwmul/vwmacc,
// int8 → int16) whose int16 lanes hold at most two products of the block (Q8: |w·x| <= 128·127,
// two of them < 2^15) or all 32 (Q4: |w·x| <= 8·127, 32 of them < 2^15), then widened to int32.
//
// Layout 0 (rows): a block is split in halves of 16 (Q8: two loads; Q4: the low and the high
//   nibbles of its 16 bytes, which are elements 0-15 and 16-31), so lane j of
//   vwmacc(vwmul(w_lo, x_lo), w_hi, x_hi) is w_j·x_j + w_{j+16}·x_{j+16}; vwredsum widens and
//   adds the 16 lanes into sumi_b. Four rows share each block of x. The float part is scalar.
// Layout 1 (16-row panels, docs/mlb-format.md): lane = row. A 64-byte unit holds 4 weights of 16
//   rows (row i's 4 at bytes 4i..4i+3); a segment load (vlseg4e8) splits it into 4 vectors of 16
//   rows each, and vwmul.vx / vwmacc.vx against the matching x quant (a scalar) accumulate every
//   row's products at once: a block is 8 units (Q8) or 4 units (Q4, low nibbles are elements
//   4u..4u+3, high ones 16+4u..16+4u+3), and no horizontal step is needed. The float part runs
//   16 rows wide: vfcvt, vfmul by the panel's 16 contiguous scales, vfmul by dx, vfadd into one of
//   four accumulators (block b into b mod 4), then (p0 + p1) + (p2 + p3).
// Both paths use vl = 16 (e8m1 holds 16 lanes at VLEN 128) whatever VLEN is, and the float order
// is the canonical one of kernels/kernels.h, so the results are the scalar reference's bits at
// every vector length (tested at 128, 256 and 512: cmake/tests/riscv.cmake).
// Reads only the rows [r0, r1) of W (layout 1: their panels) and x; writes only y[r0, r1). No
// alignment needed. Tests: verify/kernel_checks.cc. Reference: kernels/scalar/matvec.cc.
#include "kernels/kernels.h"
#include "kernels/riscv/rvv/rvv_common.h"

namespace {

constexpr size_t kVl = 16;  // vl of every step: half a block (layout 0), the 16 rows of a panel (layout 1)

// Int8 values of a Q4_0 nibble vector: lo = (v & 0x0F) − 8, hi = (v >> 4) − 8 (docs/mlb-format.md).
inline vint8m1_t q4_lo(vuint8m1_t v, size_t vl) {
  return __riscv_vsub_vx_i8m1(__riscv_vreinterpret_v_u8m1_i8m1(__riscv_vand_vx_u8m1(v, 0x0F, vl)), 8, vl);
}
inline vint8m1_t q4_hi(vuint8m1_t v, size_t vl) {
  return __riscv_vsub_vx_i8m1(__riscv_vreinterpret_v_u8m1_i8m1(__riscv_vsrl_vx_u8m1(v, 4, vl)), 8, vl);
}

// ---------------------------------------------------------------- layout 0 (rows)

// Exact int32 dot product of one weight block (Q8: 32 bytes; Q4: 16 bytes) with x's halves.
template <bool Q4>
inline int32_t block_dot(const uint8_t *w, vint8m1_t x_lo, vint8m1_t x_hi) {
  vint8m1_t w_lo, w_hi;
  if constexpr (Q4) {
    const vuint8m1_t v = __riscv_vle8_v_u8m1(w, kVl);
    w_lo = q4_lo(v, kVl);
    w_hi = q4_hi(v, kVl);
  } else {
    w_lo = __riscv_vle8_v_i8m1(reinterpret_cast<const int8_t *>(w), kVl);
    w_hi = __riscv_vle8_v_i8m1(reinterpret_cast<const int8_t *>(w) + kVl, kVl);
  }
  const vint16m2_t p = __riscv_vwmacc_vv_i16m2(__riscv_vwmul_vv_i16m2(w_lo, x_lo, kVl), w_hi, x_hi, kVl);
  return __riscv_vmv_x_s_i32m1_i32(__riscv_vwredsum_vs_i16m2_i32m1(p, __riscv_vmv_s_x_i32m1(0, 1), kVl));
}

// Rows r .. r+R-1 (layout 0).
template <bool Q4, int R>
inline void rows_tile(float *y, const ml_qtensor *W, const ml_qact *x, int r) {
  constexpr size_t kBlockBytes = Q4 ? ML_QK / 2 : ML_QK;
  const int nb = W->cols / ML_QK;
  const uint8_t *w[R];
  const float *dw[R];
  float p[R][4];
  for (int i = 0; i < R; ++i) {
    w[i] = static_cast<const uint8_t *>(W->q) + size_t(r + i) * size_t(nb) * kBlockBytes;
    dw[i] = W->d + size_t(r + i) * size_t(nb);
    p[i][0] = p[i][1] = p[i][2] = p[i][3] = 0.0f;
  }
  for (int b = 0; b < nb; ++b) {
    const int8_t *xb = x->q + size_t(b) * ML_QK;
    const vint8m1_t x_lo = __riscv_vle8_v_i8m1(xb, kVl), x_hi = __riscv_vle8_v_i8m1(xb + ML_QK / 2, kVl);
    const float dx = x->d[b];
    for (int i = 0; i < R; ++i) {
      const int32_t sumi = block_dot<Q4>(w[i] + size_t(b) * kBlockBytes, x_lo, x_hi);
      p[i][b & 3] += (float(sumi) * dw[i][b]) * dx;
    }
  }
  for (int i = 0; i < R; ++i) y[r + i] = (p[i][0] + p[i][1]) + (p[i][2] + p[i][3]);
}

template <bool Q4>
void matvec_rows(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  int r = r0;
  for (; r + 4 <= r1; r += 4) rows_tile<Q4, 4>(y, W, x, r);
  for (; r < r1; ++r) rows_tile<Q4, 1>(y, W, x, r);
}

// ---------------------------------------------------------------- layout 1 (16-row panels)

// Exact int32 block sums of the 16 rows of one panel block (its units start at `units`), lane = row.
template <bool Q4>
inline vint32m4_t panel_block_sums(const uint8_t *units, const int8_t *xb) {
  vint8m1_t f0, f1, f2, f3;  // f_k lane i = byte 4i + k of a unit: weight k of row i
  if constexpr (Q4) {
    vint16m2_t s = __riscv_vmv_v_x_i16m2(0, kVl);  // 32 products of at most 8·127 per lane
    for (int u = 0; u < 4; ++u) {
      vuint8m1_t g0, g1, g2, g3;
      __riscv_vlseg4e8_v_u8m1(&g0, &g1, &g2, &g3, units + 64 * u, kVl);
      const int8_t *xl = xb + 4 * u, *xh = xb + ML_QK / 2 + 4 * u;  // elements of the low / high nibbles
      s = __riscv_vwmacc_vx_i16m2(s, xl[0], q4_lo(g0, kVl), kVl);
      s = __riscv_vwmacc_vx_i16m2(s, xl[1], q4_lo(g1, kVl), kVl);
      s = __riscv_vwmacc_vx_i16m2(s, xl[2], q4_lo(g2, kVl), kVl);
      s = __riscv_vwmacc_vx_i16m2(s, xl[3], q4_lo(g3, kVl), kVl);
      s = __riscv_vwmacc_vx_i16m2(s, xh[0], q4_hi(g0, kVl), kVl);
      s = __riscv_vwmacc_vx_i16m2(s, xh[1], q4_hi(g1, kVl), kVl);
      s = __riscv_vwmacc_vx_i16m2(s, xh[2], q4_hi(g2, kVl), kVl);
      s = __riscv_vwmacc_vx_i16m2(s, xh[3], q4_hi(g3, kVl), kVl);
    }
    return __riscv_vwcvt_x_x_v_i32m4(s, kVl);
  } else {
    vint32m4_t acc = __riscv_vmv_v_x_i32m4(0, kVl);
    for (int u = 0; u < 8; ++u) {
      __riscv_vlseg4e8_v_i8m1(&f0, &f1, &f2, &f3, reinterpret_cast<const int8_t *>(units) + 64 * u, kVl);
      const int8_t *xu = xb + 4 * u;
      // two products per int16 lane, then into int32
      const vint16m2_t s01 = __riscv_vwmacc_vx_i16m2(__riscv_vwmul_vx_i16m2(f0, xu[0], kVl), xu[1], f1, kVl);
      const vint16m2_t s23 = __riscv_vwmacc_vx_i16m2(__riscv_vwmul_vx_i16m2(f2, xu[2], kVl), xu[3], f3, kVl);
      acc = __riscv_vwadd_wv_i32m4(__riscv_vwadd_wv_i32m4(acc, s01, kVl), s23, kVl);
    }
    return acc;
  }
}

template <bool Q4>
void matvec_panels(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  constexpr size_t kBlockBytes = (Q4 ? 4 : 8) * 64;  // units of one panel block
  const int nb = W->cols / ML_QK;
  const uint8_t *q = static_cast<const uint8_t *>(W->q);
  for (int p = r0 / ML_PANEL_ROWS; p * ML_PANEL_ROWS < r1; ++p) {
    const size_t pb0 = size_t(p) * size_t(nb);
    // p_j += (float(sumi_b) · dw_b) · dx_b for the 16 rows of the panel
    auto fold = [&](vfloat32m4_t acc, int b) {
      const vint32m4_t s = panel_block_sums<Q4>(q + (pb0 + size_t(b)) * kBlockBytes, x->q + size_t(b) * ML_QK);
      const vfloat32m4_t d = __riscv_vle32_v_f32m4(W->d + (pb0 + size_t(b)) * ML_PANEL_ROWS, kVl);
      const vfloat32m4_t t = __riscv_vfmul_vf_f32m4(__riscv_vfmul_vv_f32m4(__riscv_vfcvt_f_x_v_f32m4(s, kVl), d, kVl),
                                                    x->d[b], kVl);
      return __riscv_vfadd_vv_f32m4(acc, t, kVl);
    };
    vfloat32m4_t a0 = __riscv_vfmv_v_f_f32m4(0.0f, kVl), a1 = a0, a2 = a0, a3 = a0;
    int b = 0;
    for (; b + 4 <= nb; b += 4) {
      a0 = fold(a0, b);
      a1 = fold(a1, b + 1);
      a2 = fold(a2, b + 2);
      a3 = fold(a3, b + 3);
    }
    if (b < nb) a0 = fold(a0, b);  // the last nb mod 4 blocks
    if (b + 1 < nb) a1 = fold(a1, b + 1);
    if (b + 2 < nb) a2 = fold(a2, b + 2);
    const vfloat32m4_t total =
        __riscv_vfadd_vv_f32m4(__riscv_vfadd_vv_f32m4(a0, a1, kVl), __riscv_vfadd_vv_f32m4(a2, a3, kVl), kVl);
    const int row0 = p * ML_PANEL_ROWS, lo = r0 > row0 ? r0 - row0 : 0;
    const int hi = r1 < row0 + ML_PANEL_ROWS ? r1 - row0 : ML_PANEL_ROWS;
    __riscv_vse32_v_f32m4(y + row0 + lo, __riscv_vslidedown_vx_f32m4(total, size_t(lo), kVl), size_t(hi - lo));
  }
}

}  // namespace

extern "C" void ml_k_matvec_q8_rvv(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  if (W->layout == ML_LAYOUT_PANEL16) return matvec_panels<false>(y, W, x, r0, r1);
  matvec_rows<false>(y, W, x, r0, r1);
}

extern "C" void ml_k_matvec_q4_rvv(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  if (W->layout == ML_LAYOUT_PANEL16) return matvec_panels<true>(y, W, x, r0, r1);
  matvec_rows<true>(y, W, x, r0, r1);
}
