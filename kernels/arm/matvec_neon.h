// The shared parts of the ARM matvec_q8/q4 and matmul_q8/q4 (override sets neon, neon_dotprod,
// sve; ARMv7 and AArch64 alike: every ARMv7 difference sits in padd). A set supplies only its
// integer dot; this header has the rest.
//   Layout 1 (16-row panels): Width, the float part of kernels/panel_driver.h on four 128-bit
//   float32x4 (fixed 4 lanes, so SVE's bits cannot depend on its VL), and PanelInt<Sums16>, the
//   driver's Int part around a set's Sums16::sums<Q4>(units, x) = the 16 rows' exact block sums
//   (and sums_n<Q4, T> for T tokens at once, where a set has it: QuadSums).
//   Layout 0 (rows): matvec_rows<Tile> takes rows four at a time and blocks a tile at a time;
//   Tile::sums fills sums[j][i] = exact int32 dot of block j of row i with x (Q4 rows arrive
//   unpacked to int8 by the loop: (q & 0x0F) − 8, (q >> 4) − 8).
// Float order (kernels/kernels.h): t_b = (float(sumi_b) · dw_b) · dx_b into partial b mod 4, then
// (p0 + p1) + (p2 + p3); separate vmulq/vaddq (-ffp-contract=off): the scalar reference's bits.
// ARMv7 only: NEON flushes denormals to zero, VFP does not, so a t_b or partial below 2^-126
// (block scales dw·dx below ~1e-33; real and test scales are above 1e-5) may differ. The Highway
// float kernels share this on ARMv7; exp, softmax and silu_mul recompute underflows with VFP.
// Reads only the rows [r0, r1) of W (layout 1: their panels) and x; writes only y[r0, r1) (matmul:
// of each token's row of Y); no alignment needed. Reference: kernels/scalar/matvec.cc.
// Tests: verify/kernel_checks.cc.
#pragma once
#include <arm_neon.h>

#include <cstring>

#include "kernels/kernels.h"
#include "kernels/panel_driver.h"

namespace ml::arm {

// [a0+a1, a2+a3, b0+b1, b2+b3], exact. ARMv7 has no 128-bit pairwise add.
inline int32x4_t padd(int32x4_t a, int32x4_t b) {
#if defined(__aarch64__)
  return vpaddq_s32(a, b);
#else
  return vcombine_s32(vpadd_s32(vget_low_s32(a), vget_high_s32(a)), vpadd_s32(vget_low_s32(b), vget_high_s32(b)));
#endif
}

inline int8x16_t q4_lo(uint8x16_t v) { return vsubq_s8(vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0x0F))), vdupq_n_s8(8)); }
inline int8x16_t q4_hi(uint8x16_t v) { return vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(v, 4)), vdupq_n_s8(8)); }

// p + (float(s) · dw) · dx, two roundings.
inline float32x4_t fold4(float32x4_t p, int32x4_t s, float32x4_t dw, float32x4_t dx) {
  return vaddq_f32(p, vmulq_f32(vmulq_f32(vcvtq_f32_s32(s), dw), dx));
}

// y[r + i] = lane i of v for the rows r + i in [r0, r1).
inline void store_rows(float *y, int r, float32x4_t v, int r0, int r1) {
  if (r >= r0 && r + 4 <= r1) return vst1q_f32(y + r, v);
  float t[4];
  vst1q_f32(t, v);
  for (int i = 0; i < 4; ++i)
    if (r + i >= r0 && r + i < r1) y[r + i] = t[i];
}

// The driver's float part: 16 rows as four float32x4 (kernels/panel_driver.h's Quads). Tokens per
// weight load: a token's 4 partials × 16 rows take 16 q-registers, ARMv7's whole file and half of
// AArch64's: 2 tokens spill partials to the stack (L1) but halve weight reads.
struct Quad {
  using I = int32x4_t;
  using F = float32x4_t;
  static constexpr int kTokens = 2;
  static F zero() { return vdupq_n_f32(0.0f); }
  static F fold(F p, I s, const float *d, float dx) { return fold4(p, s, vld1q_f32(d), vdupq_n_f32(dx)); }
  static F add(F a, F b) { return vaddq_f32(a, b); }
  static void store(float *y, F v, int lo, int hi) { store_rows(y, 0, v, lo, hi); }
};
using Width = driver::Quads<Quad>;

struct XGroups {  // a block of x as 8 groups of 4 activations, for broadcasting
  int32_t g[8];
};

template <class Sums16>
struct PanelInt {
  using Sums = Width::Sums;
  using X = XGroups;
  struct Wq8 {  // weights are read where they lie (once for a matmul's tokens: dots)
    const uint8_t *u;
  };
  struct Wq4 {
    const uint8_t *u;
  };
  template <bool Q4>
  static X prep(const int8_t *xb, int32_t) {
    X x;
    std::memcpy(x.g, xb, sizeof x.g);
    return x;
  }
  static Wq8 load_q8(const int8_t *u) { return {reinterpret_cast<const uint8_t *>(u)}; }
  static Wq4 load_q4(const uint8_t *u) { return {u}; }
  static Sums dot(const Wq8 &w, const X &x) { return Sums16::template sums<false>(w.u, x); }
  static Sums dot(const Wq4 &w, const X &x) { return Sums16::template sums<true>(w.u, x); }
  // T tokens at once (kernels/panel_driver.h, HasDots) where Sums16 has sums_n: each slice loaded
  // (and Q4 unpacked) once for the T tokens.
  template <int T, class S = Sums16>
  static auto dots(const Wq8 &w, const X *x, Sums *out) -> decltype(S::template sums_n<false, T>(w.u, x, out)) {
    return S::template sums_n<false, T>(w.u, x, out);
  }
  template <int T, class S = Sums16>
  static auto dots(const Wq4 &w, const X *x, Sums *out) -> decltype(S::template sums_n<true, T>(w.u, x, out)) {
    return S::template sums_n<true, T>(w.u, x, out);
  }
};

// Sums16 from a 4-row dot: slice g of unit k (16 bytes at 64k + 16g) is rows 4g..4g+3 × weights
// 4k..4k+3; Q4 unit k holds weights 4k.. (low nibbles) and 16 + 4k.. (high). Dot4 supplies the
// 4 rows' exact sums as an accumulator: Acc zero(), step(acc, w, xg) adding slice w (as int8) times
// the 4 activations packed in xg, lane = row, and finish(acc) → int32x4_t. sums_n: T tokens' x,
// each slice loaded (and unpacked) once; sums: one token.
template <class Dot4>
struct QuadSums {
  template <bool Q4, int T>
  static void sums_n(const uint8_t *units, const XGroups *x, Width::Sums *out) {
    for (int g = 0; g < 4; ++g) {
      typename Dot4::Acc acc[T];
      for (int t = 0; t < T; ++t) acc[t] = Dot4::zero();
      for (int k = 0; k < 8; ++k) {
        const uint8_t *slice = units + 64 * (Q4 ? k & 3 : k) + 16 * g;
        const int8x16_t w = [&] {
          if constexpr (Q4) return k < 4 ? q4_lo(vld1q_u8(slice)) : q4_hi(vld1q_u8(slice));
          else return vld1q_s8(reinterpret_cast<const int8_t *>(slice));
        }();
        for (int t = 0; t < T; ++t) acc[t] = Dot4::step(acc[t], w, x[t].g[k]);
      }
      for (int t = 0; t < T; ++t) out[t].v[g] = Dot4::finish(acc[t]);
    }
  }
  template <bool Q4>
  static Width::Sums sums(const uint8_t *units, const XGroups &x) {
    Width::Sums s;
    sums_n<Q4, 1>(units, &x, &s);
    return s;
  }
};

constexpr int kTile = 64;  // layout 0: blocks per tile (2 KB of int8 per row)

// Tile from a one-row block dot Block::block(w0, w1, x0, x1): four int32 lanes summing to
// Σ w·x over the block's 32 (w0/x0: elements 0..15, w1/x1: 16..31).
template <class Block>
struct BlockTile {
  static void sums(int32_t (*s)[4], const int8_t *const w[4], const int8_t *x, int nblk) {
    for (int j = 0; j < nblk; ++j) {
      const int8x16_t x0 = vld1q_s8(x + j * ML_QK), x1 = vld1q_s8(x + j * ML_QK + 16);
      int32x4_t r[4];
      for (int i = 0; i < 4; ++i) r[i] = Block::block(vld1q_s8(w[i] + j * ML_QK), vld1q_s8(w[i] + j * ML_QK + 16), x0, x1);
      vst1q_s32(s[j], padd(padd(r[0], r[1]), padd(r[2], r[3])));
    }
  }
};

// Layout 0: rows [r0, r1) four at a time (a last group of R < 4 rows repeats its last row in the
// unused lanes; only real rows are stored), partial b mod 4 a register by unrolling blocks by 4.
template <class Tile, bool Q4>
void matvec_rows(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  const int nb = W->cols / ML_QK;
  constexpr size_t kBlockBytes = Q4 ? ML_QK / 2 : ML_QK;
  for (int r = r0; r < r1; r += 4) {
    const int8_t *w[4];
    const float *dw[4];
    int32_t s[kTile][4];
    int8_t unpacked[4][Q4 ? kTile * ML_QK : 1];
    float32x4_t p[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
    for (int b0 = 0; b0 < nb; b0 += kTile) {
      const int nblk = nb - b0 < kTile ? nb - b0 : kTile;
      for (int i = 0; i < 4; ++i) {
        const size_t row = size_t(r + i < r1 ? r + i : r1 - 1);
        const uint8_t *src = static_cast<const uint8_t *>(W->q) + (row * nb + b0) * kBlockBytes;
        dw[i] = W->d + row * nb;
        w[i] = Q4 ? unpacked[i] : reinterpret_cast<const int8_t *>(src);
        for (int j = 0; Q4 && j < nblk; ++j) {
          vst1q_s8(unpacked[i] + j * ML_QK, q4_lo(vld1q_u8(src + 16 * j)));
          vst1q_s8(unpacked[i] + j * ML_QK + 16, q4_hi(vld1q_u8(src + 16 * j)));
        }
      }
      Tile::sums(s, w, x->q + size_t(b0) * ML_QK, nblk);
      const auto fold = [&](int j, int b) {
        float32x4_t d = vld1q_dup_f32(dw[0] + b);
        d = vld1q_lane_f32(dw[1] + b, d, 1);
        d = vld1q_lane_f32(dw[2] + b, d, 2);
        p[j] = fold4(p[j], vld1q_s32(s[b - b0]), vld1q_lane_f32(dw[3] + b, d, 3), vld1q_dup_f32(x->d + b));
      };
      int b = b0;  // j = b mod 4 a literal at every call
      for (; b + 4 <= b0 + nblk; b += 4) fold(0, b), fold(1, b + 1), fold(2, b + 2), fold(3, b + 3);
      if (b < b0 + nblk) fold(0, b);
      if (b + 1 < b0 + nblk) fold(1, b + 1);
      if (b + 2 < b0 + nblk) fold(2, b + 2);
    }
    store_rows(y, r, vaddq_f32(vaddq_f32(p[0], p[1]), vaddq_f32(p[2], p[3])), r0, r1);
  }
}

template <class Tile>
void rows_q8(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) { matvec_rows<Tile, false>(y, W, x, r0, r1); }
template <class Tile>
void rows_q4(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) { matvec_rows<Tile, true>(y, W, x, r0, r1); }

}  // namespace ml::arm
