// matvec_q8/q4 and matmul_q8/q4, rvv override set (RISC-V Vector 1.0, vector-length agnostic).
//   y[r] = sum4 over blocks b of t_b = (float(sumi_b) · dw[r,b]) · dx[b],  r in [r0, r1)
// sumi_b is the exact int32 dot product of a block, from widening multiplies (vwmul/vwmacc,
// int8 → int16) whose int16 lanes hold at most two products of the block (Q8: |w·x| <= 128·127,
// two of them < 2^15; Q4: |w·x| <= 8·128, smaller still), then widened to int32.
//
// Layout 0 (rows): a block is split in halves of 16 (Q8: two loads; Q4: the low and the high
//   nibbles of its 16 bytes, which are elements 0-15 and 16-31), so lane j of
//   vwmacc(vwmul(w_lo, x_lo), w_hi, x_hi) is w_j·x_j + w_{j+16}·x_{j+16}; vwredsum widens and
//   adds the 16 lanes into sumi_b. The float part is scalar.
// Layout 1 (16-row panels, docs/mlb-format.md): the loop, token batching and row tails are
//   kernels/panel_driver.h's; lane = row. A 64-byte unit holds 4 weights of 16 rows (row i's 4 at
//   bytes 4i..4i+3); a segment load (vlseg4e8) splits it into 4 vectors of 16 rows each, and
//   vwmul.vx / vwmacc.vx against the matching x quant (a scalar) accumulate every row's products:
//   a block is 8 units (Q8) or 4 units read twice (Q4: low nibbles are elements 4u..4u+3, high
//   ones 16+4u..16+4u+3). RVV types are sizeless, so the driver's Sums and Acc are int32[16] and
//   float[16], loaded and stored around vfcvt, vfmul by the 16 row scales, vfmul by dx, vfadd.
// Every step uses vl = 16 (e8m1 holds 16 lanes at VLEN 128) whatever VLEN is, and the float order
// is the canonical one of kernels/kernels.h, so the results are the scalar reference's bits at
// every vector length (tested at 128, 256 and 512: cmake/tests/riscv.cmake).
// Reads only the rows [r0, r1) of W (layout 1: their panels) and x; writes only y[r0, r1). No
// alignment needed. Tests: verify/kernel_checks.cc. Reference: kernels/scalar/matvec.cc.
// Defines: ml_k_matvec_q8_rvv ml_k_matvec_q4_rvv ml_k_matmul_q8_rvv ml_k_matmul_q4_rvv ml_k_peak_rvv
#include <cstring>

#include "kernels/kernels.h"
#include "kernels/panel_driver.h"
#include "kernels/riscv/rvv/rvv_common.h"

namespace {

constexpr size_t kVl = 16;  // vl of every step: half a block (layout 0), the 16 rows of a panel (layout 1)

// Int8 weights of a byte vector: Q8 as they are, Q4 the low (Hi = false) or high nibbles − 8.
template <bool Q4, bool Hi>
inline vint8m1_t weights(vuint8m1_t v) {
  if constexpr (!Q4) return __riscv_vreinterpret_v_u8m1_i8m1(v);
  const vuint8m1_t n = Hi ? __riscv_vsrl_vx_u8m1(v, 4, kVl) : __riscv_vand_vx_u8m1(v, 0x0F, kVl);
  return __riscv_vsub_vx_i8m1(__riscv_vreinterpret_v_u8m1_i8m1(n), 8, kVl);
}

// ---------------------------------------------------------------- layout 0 (rows)

// Exact int32 dot product of one weight block (Q8: 32 bytes; Q4: 16 bytes) with its 32 x quants.
template <bool Q4>
inline int32_t block_dot(const uint8_t *w, const int8_t *x) {
  const vint8m1_t w_lo = weights<Q4, false>(__riscv_vle8_v_u8m1(w, kVl));
  const vint8m1_t w_hi = weights<Q4, true>(__riscv_vle8_v_u8m1(Q4 ? w : w + kVl, kVl));  // Q4: the same 16 bytes
  const vint16m2_t p = __riscv_vwmacc_vv_i16m2(__riscv_vwmul_vv_i16m2(w_lo, __riscv_vle8_v_i8m1(x, kVl), kVl), w_hi,
                                               __riscv_vle8_v_i8m1(x + kVl, kVl), kVl);
  return __riscv_vmv_x_s_i32m1_i32(__riscv_vwredsum_vs_i16m2_i32m1(p, __riscv_vmv_s_x_i32m1(0, 1), kVl));
}

template <bool Q4>
void rows(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  constexpr size_t kBytes = Q4 ? ML_QK / 2 : ML_QK;
  const int nb = W->cols / ML_QK;
  for (int r = r0; r < r1; ++r) {
    const uint8_t *w = static_cast<const uint8_t *>(W->q) + size_t(r) * size_t(nb) * kBytes;
    const float *dw = W->d + size_t(r) * size_t(nb);
    float p[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int b = 0; b < nb; ++b) p[b & 3] += (float(block_dot<Q4>(w + b * kBytes, x->q + b * ML_QK)) * dw[b]) * x->d[b];
    y[r] = (p[0] + p[1]) + (p[2] + p[3]);
  }
}

// ---------------------------------------------------------------- layout 1 (panels): driver parts

struct Width {
  static constexpr int kTokens = 4;
  struct Sums {
    int32_t v[16];
  };
  struct Acc {
    float v[16];
  };
  static Acc zero() { return {}; }  // +0.0f
  static Acc fold(Acc a, const Sums &s, const float *d, float dx) {  // a + (float(s) · d) · dx
    const vfloat32m4_t f = __riscv_vfcvt_f_x_v_f32m4(__riscv_vle32_v_i32m4(s.v, kVl), kVl);
    const vfloat32m4_t t = __riscv_vfmul_vv_f32m4(f, __riscv_vle32_v_f32m4(d, kVl), kVl);
    return add(a, __riscv_vfmul_vf_f32m4(t, dx, kVl));
  }
  static Acc add(Acc a, vfloat32m4_t b) {
    __riscv_vse32_v_f32m4(a.v, __riscv_vfadd_vv_f32m4(__riscv_vle32_v_f32m4(a.v, kVl), b, kVl), kVl);
    return a;
  }
  static Acc add(Acc a, const Acc &b) { return add(a, __riscv_vle32_v_f32m4(b.v, kVl)); }
  static void store(float *y, const Acc &a, int lo, int hi) {
    std::memcpy(y + lo, a.v + lo, sizeof(float) * size_t(hi - lo));
  }
};

struct Int {
  using Sums = Width::Sums;
  using X = const int8_t *;  // the block's 32 quants, used as scalars; weights are read where they lie
  using Wq8 = const int8_t *;
  using Wq4 = const uint8_t *;
  template <bool Q4>
  static X prep(const int8_t *xb, int32_t) {
    return xb;
  }
  static Wq8 load_q8(const int8_t *units) { return units; }
  static Wq4 load_q4(const uint8_t *units) { return units; }
  template <bool Q4, bool Hi>  // acc + Σ over one unit's 4 weights, x quants xu[0..3]
  static vint32m4_t unit(vint32m4_t acc, const uint8_t *unit, const int8_t *xu) {
    vuint8m1_t g0, g1, g2, g3;  // g_k lane i = byte 4i + k: weight k of row i
    __riscv_vlseg4e8_v_u8m1(&g0, &g1, &g2, &g3, unit, kVl);
    const vint16m2_t s01 = __riscv_vwmacc_vx_i16m2(__riscv_vwmul_vx_i16m2(weights<Q4, Hi>(g0), xu[0], kVl), xu[1],
                                                   weights<Q4, Hi>(g1), kVl);
    const vint16m2_t s23 = __riscv_vwmacc_vx_i16m2(__riscv_vwmul_vx_i16m2(weights<Q4, Hi>(g2), xu[2], kVl), xu[3],
                                                   weights<Q4, Hi>(g3), kVl);
    return __riscv_vwadd_wv_i32m4(__riscv_vwadd_wv_i32m4(acc, s01, kVl), s23, kVl);
  }
  template <bool Q4>  // Q4: units 0..3, low nibbles against x quants 0..15, high ones 16..31
  static Sums sums(const uint8_t *units, const X &x) {
    vint32m4_t acc = __riscv_vmv_v_x_i32m4(0, kVl);
    for (int u = 0; u < 8; ++u) {
      if (Q4 && u >= 4)
        acc = unit<Q4, true>(acc, units + 64 * (u - 4), x + 4 * u);
      else
        acc = unit<Q4, false>(acc, units + 64 * u, x + 4 * u);
    }
    Sums s;
    __riscv_vse32_v_i32m4(s.v, acc, kVl);
    return s;
  }
  static Sums dot(Wq8 w, X x) { return sums<false>(reinterpret_cast<const uint8_t *>(w), x); }
  static Sums dot(Wq4 w, X x) { return sums<true>(w, x); }
};

}  // namespace

ML_PANEL_KERNELS(rvv, Width, Int, rows<false>, rows<true>)
