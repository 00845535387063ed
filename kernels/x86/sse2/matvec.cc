// sse2 override: matvec_q8, matvec_q4, matmul_q8, matmul_q4, matvec_f32 with SSE2 only (the
// x86-64 v1 floor; Highway has no SSE2 target). SSE2 has no byte multiply, so this file brings its
// own dot on the loops of kernels/x86/quant_x86.h (float order and bits as kernels/scalar/matvec.cc;
// tests: verify/kernel_checks.cc):
// - rows (Rows<Sse2>): int8 sign-extended to int16 (unpack with itself, arithmetic shift by 8),
//   pmaddwd → int32; x widened once per 4 blocks;
// - panels (Sse2Panel on Width<V128>): pmaddwd on sign-extended units (Q8) or on each row's even and
//   odd nibbles taken in place (Q4), described below.
// matvec_f32: 4 rows × 4 lanes, multiply then add (SSE2 has no FMA); reassociated, within 1e-5.
// Defines: ml_k_matvec_q8_sse2 ml_k_matvec_q4_sse2 ml_k_matmul_q8_sse2 ml_k_matmul_q4_sse2 ml_k_peak_sse2
// Defines: ml_k_matvec_f32_sse2
#include <type_traits>

#include "kernels/x86/quant_x86.h"

namespace {

using namespace ml::x86;

struct Sse2 : V128 {  // the Isa of Rows: 16 bytes of x as int16, lo (bytes 0-7) and hi (8-15)
  struct Xop {
    __m128i lo, hi;
  };
  static constexpr int kBias = 0;
  static __m128i widen_lo(__m128i v) { return _mm_srai_epi16(_mm_unpacklo_epi8(v, v), 8); }
  static __m128i widen_hi(__m128i v) { return _mm_srai_epi16(_mm_unpackhi_epi8(v, v), 8); }
  static Xop xop(__m128i x) { return {widen_lo(x), widen_hi(x)}; }
  static __m128i start(__m128i) { return zero(); }
  static __m128i bias8(__m128i w) { return w; }
  static __m128i dot8(__m128i acc, __m128i w, const Xop &x) {
    return add32(acc, add32(_mm_madd_epi16(widen_lo(w), x.lo), _mm_madd_epi16(widen_hi(w), x.hi)));
  }
};

// Panels (layout 1): 16 bytes of a unit are 4 rows × 4 weights, a row per int32 lane.
// Q8: the bytes sign-extended to int16 meet x's quad (as int16, twice) in pmaddwd, two int32 per
// row, paired up once per block. Q4: seen as int16 lanes a row holds weights (0, 1) and (2, 3);
// masks take each nibble where it lies, 1, 16 or 256 times its value (the odd byte's high nibble
// by a shift), and pmaddwd against x's matching pair ([x0 x2] "even" or [x1 x3] "odd") sums in
// the row's own lane: nothing unpacked, no pairing; x's pairs come scaled so that every product
// is 256 times its value, one sum and one exact shift. (The same even/odd form for Q8 measured
// 1-13 % slower: three shifts per 16 bytes against two unpacks and two shifts.)
struct Sse2Panel {
  using Sums = Width<V128>::Sums;
  struct XQ8 {
    __m128i xq16[8];  // quad u as int16 [x0 x1 x2 x3 x0 x1 x2 x3]
    int32_t s;
  };
  struct XQ4 {
    __m128i even[8], odd[8];  // quad u as int16: [x0 x2] and [x1 x3], four times, scaled (Q4 dot)
    int32_t s;
  };
  static void splat4(__m128i v, __m128i *out) {  // out[k]: lane k of v in every lane
    out[0] = _mm_shuffle_epi32(v, 0x00), out[1] = _mm_shuffle_epi32(v, 0x55);
    out[2] = _mm_shuffle_epi32(v, 0xAA), out[3] = _mm_shuffle_epi32(v, 0xFF);
  }
  template <bool Q4>
  static std::conditional_t<Q4, XQ4, XQ8> prep(const int8_t *xb, int32_t s) {
    if constexpr (Q4) {
      XQ4 p;
      p.s = s;
      for (int h = 0; h < 2; ++h) {  // quads 4h .. 4h+3, each pair scaled as the Q4 dot() says
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(xb + 16 * h));
        const __m128i even = h == 0 ? _mm_slli_epi16(v, 8) : _mm_srai_epi16(_mm_slli_epi16(v, 8), 4);
        const __m128i odd = h == 0 ? _mm_srai_epi16(v, 8) : _mm_and_si128(v, _mm_set1_epi16(short(0xFF00)));
        splat4(even, p.even + 4 * h);
        splat4(odd, p.odd + 4 * h);
      }
      return p;
    } else {
      XQ8 p;
      p.s = s;
      for (int u = 0; u < 8; ++u) {
        int32_t quad;
        std::memcpy(&quad, xb + 4 * u, 4);
        const __m128i v = Sse2::widen_lo(_mm_cvtsi32_si128(quad));
        p.xq16[u] = _mm_unpacklo_epi64(v, v);
      }
      return p;
    }
  }
  // [r0, r1, r2, r3] from per-row pairs: lo = [r0a r0b r1a r1b], hi = [r2a r2b r3a r3b]
  static __m128i pairs(__m128i lo, __m128i hi) {
    const __m128 a = _mm_castsi128_ps(lo), b = _mm_castsi128_ps(hi);
    return _mm_add_epi32(_mm_castps_si128(_mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0))),
                         _mm_castps_si128(_mm_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1))));
  }
  // Weights are read where they lie.
  struct Wq8 { const int8_t *units; };
  struct Wq4 { const uint8_t *units; };
  // ml_bench peak (kernels/panel_driver.h): 12 chains of pmaddwd alone (what 16 xmm registers
  // hold beside the operand), each multiplying its own register in place (the products' int32 read
  // back as int16: a loop-carried chain, not a dot); 8 multiply-adds of (widened) int8 each.
  static int64_t peak_dots(int64_t iters, int32_t *sink) {
    constexpr int kChains = 12;
    __m128i acc[kChains];
    const __m128i w = _mm_set1_epi16(short(3 + *sink));
    for (int k = 0; k < kChains; ++k) acc[k] = _mm_set1_epi32(k + 1);
    for (int64_t i = 0; i < iters; ++i)
      for (int k = 0; k < kChains; ++k) acc[k] = _mm_madd_epi16(acc[k], w);
    __m128i s = acc[0];
    for (int k = 1; k < kChains; ++k) s = _mm_xor_si128(s, acc[k]);
    *sink = _mm_cvtsi128_si32(s);
    return iters * kChains * 8;
  }
  static Wq8 load_q8(const int8_t *units) { return {units}; }
  static Wq4 load_q4(const uint8_t *units) { return {units}; }
  static __m128i unit(const void *units, int u, int k) {  // bytes 16k .. 16k+15 of unit u
    return _mm_loadu_si128(reinterpret_cast<const __m128i *>(static_cast<const uint8_t *>(units) + 64 * u + 16 * k));
  }
  // One token per weight load, in matmul too (kTokens overrides Width<V128>'s 2, which SSE4.1 and
  // up keep): sharing the Q8 widening or the Q4 masks across 2 tokens (a dots<T> loop) measured
  // the same (Q8) or 15-20 % slower (Q4) in prompts of stories110M and TinyLlama at 1 thread.
  static constexpr int kTokens = 1;
  static constexpr bool kOwnPackedLoop = true;  // decode 10-15 % faster (kernels/panel_driver.h)
  static Sums dot(const Wq8 &w, const XQ8 &x) {
    Sums out;
    for (int k = 0; k < 4; ++k) {
      __m128i lo = _mm_setzero_si128(), hi = _mm_setzero_si128();
      for (int u = 0; u < 8; ++u) {
        const __m128i z = unit(w.units, u, k);
        lo = _mm_add_epi32(lo, _mm_madd_epi16(Sse2::widen_lo(z), x.xq16[u]));
        hi = _mm_add_epi32(hi, _mm_madd_epi16(Sse2::widen_hi(z), x.xq16[u]));
      }
      out.v[k] = pairs(lo, hi);
    }
    return out;
  }
  // Q4: 256·(Σ n·x − 8·Σx) in one int32 sum, then one exact shift. Each nibble is masked where it
  // lies (1, 16 or 256 times its value, the odd byte's high nibble by a shift) and prep scaled x's
  // matching pair by what brings every product to 256·n·x: low quads' even x by 256, odd by 1;
  // high quads' even by 16, odd by 256. Bounds: |256·x| ≤ 32768 fits int16 (x ≥ −128), each
  // product ≤ 15·32768, a block's sum ≤ 2^23 in magnitude. Low nibbles are quads 0-3, high 4-7.
  // (Three sums kept apart, 1, 16 and 256 times, and undone by two shifts: 9-12 % slower.)
  static Sums dot(const Wq4 &w, const XQ4 &x) {
    const __m128i m1 = _mm_set1_epi16(0x000F), m16 = _mm_set1_epi16(0x00F0), m256 = _mm_set1_epi16(0x0F00);
    Sums out;
    for (int k = 0; k < 4; ++k) {
      __m128i s = _mm_set1_epi32(-2048 * x.s);
      for (int j = 0; j < 4; ++j) {
        const __m128i z = unit(w.units, j, k);
        s = _mm_add_epi32(s, _mm_add_epi32(_mm_add_epi32(_mm_madd_epi16(_mm_and_si128(z, m1), x.even[j]),
                                                         _mm_madd_epi16(_mm_and_si128(z, m256), x.odd[j])),
                                           _mm_add_epi32(_mm_madd_epi16(_mm_and_si128(z, m16), x.even[4 + j]),
                                                         _mm_madd_epi16(_mm_srli_epi16(z, 12), x.odd[4 + j]))));
      }
      out.v[k] = _mm_srai_epi32(s, 8);  // a multiple of 256: exact
    }
    return out;
  }
};

}  // namespace

ML_PANEL_KERNELS(sse2, Width<V128>, Sse2Panel, Rows<Sse2>::q8, Rows<Sse2>::q4)

extern "C" void ml_k_matvec_f32_sse2(float *y, const ml_qtensor *W, const float *x, int r0, int r1) {
  const int K = W->cols, Kv = K & ~3;
  const float *w = static_cast<const float *>(W->q);
  auto rows = [&](int r, int n) {  // n = 4 or 1 rows from r
    __m128 acc[4] = {_mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps()};
    for (int j = 0; j < Kv; j += 4) {
      const __m128 xv = _mm_loadu_ps(x + j);
      for (int i = 0; i < n; ++i)
        acc[i] = _mm_add_ps(acc[i], _mm_mul_ps(_mm_loadu_ps(w + size_t(r + i) * K + j), xv));
    }
    for (int i = 0; i < n; ++i) {
      float s = ml::f4::total(acc[i]);
      for (int j = Kv; j < K; ++j) s += w[size_t(r + i) * K + j] * x[j];
      y[r + i] = s;
    }
  };
  int r = r0;
  for (; r + 4 <= r1; r += 4) rows(r, 4);
  for (; r < r1; ++r) rows(r, 1);
}
