// Quantized matrix-vector products for WebAssembly SIMD128 (override set wasm_simd128,
// kernels/kernel_table.h). Highway 1.0.3 has no int8 dot product, so its WASM body widens every
// int8 to int16 first (PromoteTo → ReorderWidenMulAccumulate); this file uses the instructions
// WASM SIMD does have for it:
//   i16x8.extmul_{low,high}_i8x16_s   16 int8·int8 products per instruction pair, exact in int16
//                                     (|q| ≤ 127, so |product| ≤ 16129)
//   i32x4.dot_i16x8_s (with ones)     adjacent int16 products summed into int32 (pmaddwd on x86)
// Contract, shapes and reference: kernels/scalar/matvec.cc; tests: verify/kernel_checks.cc.
//
// Bit-identical to the scalar reference (kernels/kernels.h): the int32 block sums are exact; four
// blocks b..b+3 are reduced to one i32x4 [sumi_b .. sumi_b+3], converted to float (exact: |sumi| <
// 2^24), and t = (sumi · dw) · dx is computed lane-wise with two separate roundings (no FMA in
// WASM SIMD without relaxed-simd, which this build does not enable). Lane j of the accumulator
// adds blocks j, j+4, j+8, … in index order — the partial sums p_j of the canonical sum4 — and a
// last group of fewer than 4 blocks is padded with +0 (the identity). y = (p0 + p1) + (p2 + p3).
// Loads are unaligned-safe and stay inside W, x and their scale arrays (the tail group copies its
// scales to a local buffer). Both weight layouts; panels below.
#include <wasm_simd128.h>

#include <cstring>

#include "kernels/kernels.h"

namespace {

// Exact int32 lanes whose sum is the dot product of 16 int8 pairs.
inline v128_t dot16(v128_t w, v128_t x) {
  const v128_t ones = wasm_i16x8_splat(1);
  const v128_t lo = wasm_i32x4_dot_i16x8(wasm_i16x8_extmul_low_i8x16(w, x), ones);
  const v128_t hi = wasm_i32x4_dot_i16x8(wasm_i16x8_extmul_high_i8x16(w, x), ones);
  return wasm_i32x4_add(lo, hi);
}

// One Q8_0 block (32 int8 weights) against 32 int8 activations: 4 int32 lanes summing to sumi.
inline v128_t block_q8(const int8_t *w, const int8_t *x) {
  return wasm_i32x4_add(dot16(wasm_v128_load(w), wasm_v128_load(x)),
                        dot16(wasm_v128_load(w + 16), wasm_v128_load(x + 16)));
}

// One Q4_0 block (16 bytes: element j in the low nibble of byte j, element 16 + j in the high
// nibble; value = nibble − 8) against 32 int8 activations.
inline v128_t block_q4(const uint8_t *w, const int8_t *x) {
  const v128_t bytes = wasm_v128_load(w);
  const v128_t eight = wasm_i8x16_splat(8);
  const v128_t lo = wasm_i8x16_sub(wasm_v128_and(bytes, wasm_i8x16_splat(0x0F)), eight);
  const v128_t hi = wasm_i8x16_sub(wasm_u8x16_shr(bytes, 4), eight);
  return wasm_i32x4_add(dot16(lo, wasm_v128_load(x)), dot16(hi, wasm_v128_load(x + 16)));
}

// [Σ a0, Σ a1, Σ a2, Σ a3]: the four block sums of one group, in block order (integer, exact).
inline v128_t reduce4(v128_t a0, v128_t a1, v128_t a2, v128_t a3) {
  const v128_t t0 = wasm_i32x4_add(wasm_i32x4_shuffle(a0, a1, 0, 4, 1, 5), wasm_i32x4_shuffle(a0, a1, 2, 6, 3, 7));
  const v128_t t1 = wasm_i32x4_add(wasm_i32x4_shuffle(a2, a3, 0, 4, 1, 5), wasm_i32x4_shuffle(a2, a3, 2, 6, 3, 7));
  return wasm_i32x4_add(wasm_i32x4_shuffle(t0, t1, 0, 1, 4, 5), wasm_i32x4_shuffle(t0, t1, 2, 3, 6, 7));
}

// acc += (float(sumi) · dw) · dx, lane-wise (the canonical t_b, one group of 4 blocks).
inline v128_t accumulate(v128_t acc, v128_t sumi, v128_t dw, v128_t dx) {
  return wasm_f32x4_add(acc, wasm_f32x4_mul(wasm_f32x4_mul(wasm_f32x4_convert_i32x4(sumi), dw), dx));
}

inline float total4(v128_t acc) {
  return (wasm_f32x4_extract_lane(acc, 0) + wasm_f32x4_extract_lane(acc, 1)) +
         (wasm_f32x4_extract_lane(acc, 2) + wasm_f32x4_extract_lane(acc, 3));
}

// y[r] for rows [r0, r1); Block(w_row, b, x) gives block b's int32 lanes. bytes_per_block: 32 or 16.
template <class Block>
void matvec_rows(float *y, const uint8_t *q, size_t bytes_per_block, const ml_qtensor *W, const ml_qact *x, int r0,
                 int r1, Block block) {
  const int nb = W->cols / ML_QK;
  const int nb4 = nb & ~3;
  for (int r = r0; r < r1; ++r) {
    const uint8_t *w = q + size_t(r) * size_t(nb) * bytes_per_block;
    const float *dw = W->d + size_t(r) * size_t(nb);
    v128_t acc = wasm_f32x4_splat(0.0f);
    int b = 0;
    for (; b < nb4; b += 4) {
      const v128_t s = reduce4(block(w, b, x), block(w, b + 1, x), block(w, b + 2, x), block(w, b + 3, x));
      acc = accumulate(acc, s, wasm_v128_load(dw + b), wasm_v128_load(x->d + b));
    }
    if (b < nb) {  // 1..3 blocks left: missing lanes are +0 (sumi 0, scales 0 → t = +0)
      const v128_t zero = wasm_i32x4_splat(0);
      const int n = nb - b;
      const v128_t s = reduce4(block(w, b, x), n > 1 ? block(w, b + 1, x) : zero, n > 2 ? block(w, b + 2, x) : zero, zero);
      float tw[4] = {0.0f, 0.0f, 0.0f, 0.0f}, tx[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      std::memcpy(tw, dw + b, size_t(n) * sizeof(float));
      std::memcpy(tx, x->d + b, size_t(n) * sizeof(float));
      acc = accumulate(acc, s, wasm_v128_load(tw), wasm_v128_load(tx));
    }
    y[r] = total4(acc);
  }
}

// Layout 1 (16-row panels, docs/mlb-format.md): 16 bytes of a 64-byte unit are 4 rows × 4 weights,
// so a lane is a row. Against x's quad repeated 4 times, extmul gives the 16 products of rows
// (0, 1) and (2, 3) and dot_i16x8 with ones adds them in pairs; after the 8 (Q8) or 4 × 2 (Q4)
// units of a block, the pairs give [sumi of rows 0..3] exactly. The float part runs 4 rows per
// register: t = (sumi · dw) · dx into partial b mod 4, then (p0 + p1) + (p2 + p3) per row.
template <bool Q4>
void panel_matvec(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  const int nb = W->cols / ML_QK;
  constexpr size_t kUnits = Q4 ? 4 : 8;
  const uint8_t *q = static_cast<const uint8_t *>(W->q);
  const v128_t ones = wasm_i16x8_splat(1);
  auto pairs = [&](v128_t w, v128_t xq, v128_t &lo, v128_t &hi) {
    lo = wasm_i32x4_add(lo, wasm_i32x4_dot_i16x8(wasm_i16x8_extmul_low_i8x16(w, xq), ones));
    hi = wasm_i32x4_add(hi, wasm_i32x4_dot_i16x8(wasm_i16x8_extmul_high_i8x16(w, xq), ones));
  };
  for (int p = r0 / ML_PANEL_ROWS; p * ML_PANEL_ROWS < r1; ++p) {
    v128_t acc[4][4];  // [partial b mod 4][4 rows]
    for (auto &a : acc)
      for (v128_t &v : a) v = wasm_f32x4_splat(0.0f);
    for (int b = 0; b < nb; ++b) {
      const uint8_t *units = q + (size_t(p) * nb + b) * kUnits * 64;
      const float *d = W->d + (size_t(p) * nb + b) * ML_PANEL_ROWS;
      v128_t xq[8];
      for (int u = 0; u < 8; ++u) {
        int32_t quad;
        std::memcpy(&quad, x->q + b * ML_QK + 4 * u, 4);
        xq[u] = wasm_i32x4_splat(quad);
      }
      const v128_t dx = wasm_f32x4_splat(x->d[b]);
      for (int k = 0; k < 4; ++k) {
        v128_t lo = wasm_i32x4_splat(0), hi = wasm_i32x4_splat(0);
        if (Q4) {
          const v128_t m = wasm_i8x16_splat(0x0F), eight = wasm_i8x16_splat(8);
          for (int j = 0; j < 4; ++j) {
            const v128_t z = wasm_v128_load(units + 64 * j + 16 * k);
            pairs(wasm_i8x16_sub(wasm_v128_and(z, m), eight), xq[j], lo, hi);
            pairs(wasm_i8x16_sub(wasm_u8x16_shr(z, 4), eight), xq[4 + j], lo, hi);
          }
        } else {
          for (int u = 0; u < 8; ++u) pairs(wasm_v128_load(units + 64 * u + 16 * k), xq[u], lo, hi);
        }
        // lo = [r0a r0b r1a r1b], hi = [r2a r2b r3a r3b] → [r0 r1 r2 r3]
        const v128_t sumi = wasm_i32x4_add(wasm_i32x4_shuffle(lo, hi, 0, 2, 4, 6), wasm_i32x4_shuffle(lo, hi, 1, 3, 5, 7));
        acc[b & 3][k] = accumulate(acc[b & 3][k], sumi, wasm_v128_load(d + 4 * k), dx);
      }
    }
    for (int k = 0; k < 4; ++k) {
      float out[4];
      wasm_v128_store(out, wasm_f32x4_add(wasm_f32x4_add(acc[0][k], acc[1][k]), wasm_f32x4_add(acc[2][k], acc[3][k])));
      for (int i = 0; i < 4; ++i) {
        const int r = p * ML_PANEL_ROWS + 4 * k + i;
        if (r >= r0 && r < r1) y[r] = out[i];
      }
    }
  }
}

}  // namespace

extern "C" void ml_k_matvec_q8_wasm_simd128(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  if (W->layout == ML_LAYOUT_PANEL16) return panel_matvec<false>(y, W, x, r0, r1);
  matvec_rows(y, static_cast<const uint8_t *>(W->q), ML_QK, W, x, r0, r1,
              [](const uint8_t *w, int b, const ml_qact *xa) {
                return block_q8(reinterpret_cast<const int8_t *>(w) + size_t(b) * ML_QK, xa->q + size_t(b) * ML_QK);
              });
}

extern "C" void ml_k_matvec_q4_wasm_simd128(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  if (W->layout == ML_LAYOUT_PANEL16) return panel_matvec<true>(y, W, x, r0, r1);
  matvec_rows(y, static_cast<const uint8_t *>(W->q), ML_QK / 2, W, x, r0, r1,
              [](const uint8_t *w, int b, const ml_qact *xa) {
                return block_q4(w + size_t(b) * (ML_QK / 2), xa->q + size_t(b) * ML_QK);
              });
}
