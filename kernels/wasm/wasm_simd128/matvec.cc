// Quantized matvec_q8/q4 and matmul_q8/q4 for WebAssembly SIMD128 (override set wasm_simd128,
// kernels/kernel_table.h). WASM SIMD has no int8 dot instruction; this file builds one from
//   i16x8.extend_{low,high}_i8x16_s   int8 → int16 (pmovsxbw on x86)
//   i32x4.dot_i16x8_s                 int16 products summed in adjacent pairs into int32, exact
//                                     (pmaddwd on x86); x is widened once per block and token
// Contract, shapes and reference: kernels/scalar/matvec.cc; tests: verify/kernel_checks.cc.
// Bit-identical to the scalar reference (kernels/kernels.h): the int32 block sums are exact, the
// float part is t_b = (float(sumi_b) · dw_b) · dx_b with two roundings (no FMA without
// relaxed-simd, which this build does not enable) into partial b mod 4, then (p0 + p1) + (p2 + p3).
//
// Layout 0 (rows): four blocks b..b+3 of a row reduce to one i32x4 [sumi_b .. sumi_b+3] and lane j
//   of the float accumulator adds blocks j, j+4, … in order — the partials p_j; the last nb mod 4
//   blocks are added to their partial in scalar code, after the vector part, in the same order.
// Layout 1 (16-row panels, docs/mlb-format.md): the loop, token batching and row tails are
//   kernels/panel_driver.h's. 16 bytes of a 64-byte unit are 4 rows × 4 weights, so a lane is a
//   row: widened, against x's quad (int16, repeated twice), dot_i16x8 gives the pair sums of rows
//   (0, 1) and (2, 3), and after a block's units the pairs give [sumi of rows 0..3].
//   Q4 nibbles are used unsigned (0..15): Σ (n − 8)·x = Σ n·x − 8·Σx, exact.
// Loads are unaligned-safe and stay inside W, x and their scale arrays.
// Defines: ml_k_matvec_q8_wasm_simd128 ml_k_matvec_q4_wasm_simd128 ml_k_matmul_q8_wasm_simd128 ml_k_matmul_q4_wasm_simd128 ml_k_peak_wasm_simd128
#include <wasm_simd128.h>

#include <cstring>

#include "kernels/kernels.h"
#include "kernels/panel_driver.h"

namespace {

// Exact int32 lanes whose sum is the dot product of 16 int8 pairs.
inline v128_t dot16(v128_t w, v128_t x) {
  return wasm_i32x4_add(wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(w), wasm_i16x8_extend_low_i8x16(x)),
                        wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(w), wasm_i16x8_extend_high_i8x16(x)));
}
inline v128_t nib_lo(v128_t z) { return wasm_v128_and(z, wasm_i8x16_splat(0x0F)); }
inline v128_t nib_hi(v128_t z) { return wasm_u8x16_shr(z, 4); }
inline v128_t shuffle_add(v128_t a, v128_t b) {  // [a0+a1, a2+a3, b0+b1, b2+b3]
  return wasm_i32x4_add(wasm_i32x4_shuffle(a, b, 0, 2, 4, 6), wasm_i32x4_shuffle(a, b, 1, 3, 5, 7));
}
inline v128_t fold4(v128_t acc, v128_t sumi, v128_t dw, v128_t dx) {  // acc + (float(sumi) · dw) · dx
  return wasm_f32x4_add(acc, wasm_f32x4_mul(wasm_f32x4_mul(wasm_f32x4_convert_i32x4(sumi), dw), dx));
}

// ---------------------------------------------------------------- layout 0 (rows)

// Block b of a row (Q8: 32 bytes; Q4: 16 bytes, element j in the low nibble of byte j, element
// 16 + j in the high one, value nibble − 8) against x: 4 int32 lanes summing to sumi_b.
template <bool Q4>
inline v128_t block(const uint8_t *w, const int8_t *x) {
  const v128_t z = wasm_v128_load(w);
  const v128_t lo = Q4 ? wasm_i8x16_sub(nib_lo(z), wasm_i8x16_splat(8)) : z;
  const v128_t hi = Q4 ? wasm_i8x16_sub(nib_hi(z), wasm_i8x16_splat(8)) : wasm_v128_load(w + 16);
  return wasm_i32x4_add(dot16(lo, wasm_v128_load(x)), dot16(hi, wasm_v128_load(x + 16)));
}

template <bool Q4>
void rows(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  constexpr size_t kBytes = Q4 ? ML_QK / 2 : ML_QK;
  const int nb = W->cols / ML_QK, nb4 = nb & ~3;
  for (int r = r0; r < r1; ++r) {
    const uint8_t *w = static_cast<const uint8_t *>(W->q) + size_t(r) * nb * kBytes;
    const float *dw = W->d + size_t(r) * nb;
    auto sumi = [&](int b) { return block<Q4>(w + b * kBytes, x->q + b * ML_QK); };
    v128_t acc = wasm_f32x4_splat(0.0f);
    for (int b = 0; b < nb4; b += 4)
      acc = fold4(acc, shuffle_add(shuffle_add(sumi(b), sumi(b + 1)), shuffle_add(sumi(b + 2), sumi(b + 3))),
                  wasm_v128_load(dw + b), wasm_v128_load(x->d + b));
    float p[4];
    wasm_v128_store(p, acc);
    for (int b = nb4; b < nb; ++b) {
      const v128_t s = sumi(b);
      const int32_t si = wasm_i32x4_extract_lane(s, 0) + wasm_i32x4_extract_lane(s, 1) +
                         wasm_i32x4_extract_lane(s, 2) + wasm_i32x4_extract_lane(s, 3);
      p[b & 3] += (float(si) * dw[b]) * x->d[b];
    }
    y[r] = (p[0] + p[1]) + (p[2] + p[3]);
  }
}

// ---------------------------------------------------------------- layout 1 (panels): driver parts

struct Quad {  // the driver's float part: 16 rows as four f32x4 (kernels/panel_driver.h's Quads)
  typedef v128_t I, F;  // one register type for both
  static constexpr int kTokens = 4;
  static F zero() { return wasm_f32x4_splat(0.0f); }
  static F fold(F p, I s, const float *d, float dx) { return fold4(p, s, wasm_v128_load(d), wasm_f32x4_splat(dx)); }
  static F add(F a, F b) { return wasm_f32x4_add(a, b); }
  static void store(float *y, F v, int lo, int hi) {  // lanes [lo, hi) of 4
    float t[4];
    wasm_v128_store(t, v);
    for (int i = lo < 0 ? 0 : lo; i < 4 && i < hi; ++i) y[i] = t[i];
  }
};
using Width = ml::driver::Quads<Quad>;

struct Int {
  using Sums = Width::Sums;
  struct X {
    v128_t xq[8];  // quad u of the block as int16, repeated twice
    int32_t s;
  };
  template <bool Q4>
  static X prep(const int8_t *xb, int32_t s) {
    X p;
    p.s = s;
    for (int u = 0; u < 8; ++u) p.xq[u] = wasm_i16x8_extend_low_i8x16(wasm_v128_load32_splat(xb + 4 * u));
    return p;
  }
  using Wq8 = const int8_t *;  // weights are read where they lie (from L1 for the later tokens of a batch)
  using Wq4 = const uint8_t *;
  static Wq8 load_q8(const int8_t *units) { return units; }
  static Wq4 load_q4(const uint8_t *units) { return units; }
  // Rows 4k .. 4k+3: the low 8 bytes of 16 are rows (0, 1), widened to int16 and dot_i16x8 against
  // the quad: [r0a r0b r1a r1b]; the high 8 bytes likewise rows (2, 3).
  template <bool Q4>
  static Sums sums(const uint8_t *units, const X &x) {
    Sums out;
    for (int k = 0; k < 4; ++k) {
      v128_t lo = wasm_i32x4_splat(0), hi = lo;
      for (int u = 0; u < 8; ++u) {  // Q4: unit u & 3, low nibbles for x quads 0..3, high for 4..7
        const v128_t z = wasm_v128_load(units + 64 * (Q4 ? u & 3 : u) + 16 * k);
        const v128_t w = Q4 ? (u < 4 ? nib_lo(z) : nib_hi(z)) : z;
        lo = wasm_i32x4_add(lo, wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(w), x.xq[u]));
        hi = wasm_i32x4_add(hi, wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(w), x.xq[u]));
      }
      out.v[k] = Q4 ? wasm_i32x4_sub(shuffle_add(lo, hi), wasm_i32x4_splat(8 * x.s)) : shuffle_add(lo, hi);
    }
    return out;
  }
  static Sums dot(Wq8 w, const X &x) { return sums<false>(reinterpret_cast<const uint8_t *>(w), x); }
  static Sums dot(Wq4 w, const X &x) { return sums<true>(w, x); }
};

}  // namespace

ML_PANEL_KERNELS(wasm_simd128, Width, Int, rows<false>, rows<true>)
