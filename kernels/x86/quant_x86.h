// The x86 quantized kernels (matvec_q8/q4, matmul_q8/q4) of every override set, written once over
// the register width. An ISA is a width V (V128, V256, V512: loads, broadcasts, int and float ops,
// the unpack of Q4 nibbles, the reduction of 4 blocks) plus its 4-byte dot instruction, mixed in by
// Maddubs<V> (pmaddubsw + pmaddwd(·, 1); signed weights as |w| against sign(x, w)) or Vnni<V>
// (vpdpbusd; weights offset by 128, w ^ 0x80 = w + 128, the excess 128·Σx subtracted at the start
// of the sum); sse2 has neither and brings its own dot (kernels/x86/sse2/matvec.cc). Each set's file
// is then one line of ML_PANEL_KERNELS (kernels/panel_driver.h) over:
//   Width<Isa>     the driver's float part: 16 panel rows as 64 / V::kBytes float registers;
//   PanelInt<Isa>  the driver's integer part on layout 1 (16-row panels, docs/mlb-format.md): a
//                  V::kBytes slice of a 64-byte unit is V::kBytes / 4 rows × 4 weights, so one dot
//                  against x's quad broadcast adds a row's 4 products into its own lane;
//   Rows<Isa>      layout 0 (rows): 4 rows at a time, x prepared once per group of 4 blocks.
// Every integer sum is exact. Float order (kernels/kernels.h), per row: t_b = (float(sumi_b) · dw_b)
// · dx_b into partial b mod 4, then (p0 + p1) + (p2 + p3) — the scalar reference's bits on every set
// (tests: verify/kernel_checks.cc).
#pragma once
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "kernels/kernels.h"
#include "kernels/panel_driver.h"
#include "simd/f32x4.h"

namespace ml::x86 {

// [Σ a, Σ b, Σ c, Σ d] of four int32x4 vectors (integer adds: exact in any order).
inline __m128i hsum4x4(__m128i a, __m128i b, __m128i c, __m128i d) {
  const __m128i ab = _mm_add_epi32(_mm_unpacklo_epi32(a, b), _mm_unpackhi_epi32(a, b));  // a0+a2 b0+b2 a1+a3 b1+b3
  const __m128i cd = _mm_add_epi32(_mm_unpacklo_epi32(c, d), _mm_unpackhi_epi32(c, d));
  return _mm_add_epi32(_mm_unpacklo_epi64(ab, cd), _mm_unpackhi_epi64(ab, cd));
}

// The ops every width shares, one line each, spelled with the width's intrinsics (P: _mm, _mm256 or
// _mm512; S: the integer register's suffix; IT, FT: its integer and float register types). Plain
// intrinsics, no compiler vector extensions: MSVC compiles them too (docs/windows.md).
#define ML_X86_VEC_OPS(N, P, S, IT, FT)                                                  \
  using I = IT;                                                                           \
  using F = FT;                                                                           \
  static constexpr int kBytes = N;                                                        \
  static I load(const void *p) { return P##_loadu_##S(static_cast<const I *>(p)); }      \
  static I zero() { return P##_setzero_##S(); }                                           \
  static I set8(char v) { return P##_set1_epi8(v); }                                      \
  static I set32(int32_t v) { return P##_set1_epi32(v); }                                 \
  static I and_(I a, I b) { return P##_and_##S(a, b); }                                   \
  static I xor_(I a, I b) { return P##_xor_##S(a, b); }                                   \
  static I add8(I a, I b) { return P##_add_epi8(a, b); }                                  \
  static I sub8(I a, I b) { return P##_sub_epi8(a, b); }                                  \
  static I add32(I a, I b) { return P##_add_epi32(a, b); }                                \
  static I srli4(I a) { return P##_srli_epi16(a, 4); }                                    \
  static F cvt(I a) { return P##_cvtepi32_ps(a); } /* int32 → float, round to nearest */ \
  static F set1f(float v) { return P##_set1_ps(v); }                                      \
  static F loadf(const float *p) { return P##_loadu_ps(p); }                              \
  static void storef(float *p, F a) { P##_storeu_ps(p, a); }                              \
  static F addf(F a, F b) { return P##_add_ps(a, b); } /* never fused (kernels/kernels.h) */ \
  static F mulf(F a, F b) { return P##_mul_ps(a, b); }

// Which widths a translation unit declares: the ones its flags enable (the compiler's target
// macros). MSVC sets few of those macros and compiles every intrinsic without flags: all of them.
// Each width adds kTokens per weight load in matmul (register budget), its dot instructions, and
// for Rows: nibbles(q, n) = 4 Q4_0 blocks (64 bytes) as nibbles 0..15 in element order (low
// nibbles are elements 0-15 of a block, high 16-31) in the 128 / kBytes registers n; reduce4(v) =
// the 4 block sums of 4 blocks' 128 / kBytes registers v.
struct V128 {  // sse2 and up; SSSE3's byte multiply where the build has it
  ML_X86_VEC_OPS(16, _mm, si128, __m128i, __m128)
  static constexpr int kTokens = 2;
  static void nibbles(const uint8_t *q, I *n) {  // two registers a block
    for (int b = 0; b < 4; ++b) {
      const I v = load(q + 16 * b);
      n[2 * b] = and_(v, set8(0x0F)), n[2 * b + 1] = and_(srli4(v), set8(0x0F));
    }
  }
  static __m128i reduce4(const I *v) {
    return hsum4x4(add32(v[0], v[1]), add32(v[2], v[3]), add32(v[4], v[5]), add32(v[6], v[7]));
  }
#if defined(__SSSE3__) || defined(_MSC_VER)
  static I maddubs(I u8, I s8) { return _mm_madd_epi16(_mm_maddubs_epi16(u8, s8), _mm_set1_epi16(1)); }
  static I abs8(I a) { return _mm_abs_epi8(a); }
  static I sign8(I a, I b) { return _mm_sign_epi8(a, b); }
#endif
};

#if defined(__AVX2__) || defined(_MSC_VER)
struct V256 {  // avx2, avxvnni
  ML_X86_VEC_OPS(32, _mm256, si256, __m256i, __m256)
  static constexpr int kTokens = 2;
  static void nibbles(const uint8_t *q, I *n) {  // a block a register
    for (int b = 0; b < 4; ++b) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(q + 16 * b)), m = _mm_set1_epi8(0x0F);
      n[b] = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_and_si128(v, m)), _mm_and_si128(_mm_srli_epi16(v, 4), m), 1);
    }
  }
  static __m128i reduce4(const I *v) {  // two rounds of vphaddd, then the two halves
    const I h = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
    return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
  }
  static I maddubs(I u8, I s8) { return _mm256_madd_epi16(_mm256_maddubs_epi16(u8, s8), _mm256_set1_epi16(1)); }
  static I abs8(I a) { return _mm256_abs_epi8(a); }
  static I sign8(I a, I b) { return _mm256_sign_epi8(a, b); }
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)  // the avx512vnni build: EVEX encoding
  static I dpbusd(I acc, I u8, I s8) { return _mm256_dpbusd_epi32(acc, u8, s8); }
#else  // the avxvnni build (and MSVC, which cannot tell the two apart by macros)
  static I dpbusd(I acc, I u8, I s8) { return _mm256_dpbusd_avx_epi32(acc, u8, s8); }
#endif
};
#endif

#if (defined(__AVX512VNNI__) && defined(__AVX512BW__)) || defined(_MSC_VER)
struct V512 {  // avx512vnni
  ML_X86_VEC_OPS(64, _mm512, si512, __m512i, __m512)
  static constexpr int kTokens = 4;  // 4 tokens × 4 partial sums + 8 weight registers fit in 32 zmm
  static void nibbles(const uint8_t *q, I *n) {  // two blocks a register: [b0 0-15, 16-31, b1 0-15, 16-31]
    for (int i = 0; i < 2; ++i) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(q + 32 * i)), m = _mm256_set1_epi8(0x0F);
      const I t = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(v, m)), _mm256_and_si256(_mm256_srli_epi16(v, 4), m), 1);
      n[i] = _mm512_shuffle_i64x2(t, t, _MM_SHUFFLE(3, 1, 2, 0));
    }
  }
  static __m128i reduce4(const I *v) {  // v[0]: blocks 0 (chunks 0-1) and 1 (2-3); v[1]: 2 and 3
    I s = _mm512_add_epi32(_mm512_shuffle_i32x4(v[0], v[1], _MM_SHUFFLE(2, 0, 2, 0)),
                           _mm512_shuffle_i32x4(v[0], v[1], _MM_SHUFFLE(3, 1, 3, 1)));  // chunk k: block k
    s = _mm512_add_epi32(s, _mm512_shuffle_epi32(s, _MM_PERM_CDAB));
    s = _mm512_add_epi32(s, _mm512_shuffle_epi32(s, _MM_PERM_BADC));  // every lane: its chunk's sum
    return _mm512_castsi512_si128(_mm512_permutexvar_epi32(_mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 8, 4, 0), s));
  }
  static I dpbusd(I acc, I u8, I s8) { return _mm512_dpbusd_epi32(acc, u8, s8); }
  // dpbusd against 4 signed bytes at x4 broadcast to every lane, as the instruction's own
  // broadcast memory operand (GCC does not fold _mm512_set1_epi32 of a load into it: a separate
  // vpbroadcastd per use, which the panel matmul, front-end bound, pays for).
  static I dpbusd_x4(I acc, I u8, const int8_t *x4) {
#if defined(__GNUC__)
    __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u8), "m"(*reinterpret_cast<const int32_t *>(x4)));
    return acc;
#else
    int32_t q;
    std::memcpy(&q, x4, 4);
    return _mm512_dpbusd_epi32(acc, u8, _mm512_set1_epi32(q));
#endif
  }
};
#endif

// The 4-byte dot instructions: udot(acc, u8, s8) adds Σ of 4 u8·s8 products to each int32 lane;
// dot8(acc, bias8(w), x) likewise for signed weights w, plus kBias·Σx, which the sums start from
// −kBias·Σx to remove (start(x) per x register for Rows, −kBias·s for panels). Plain x (xop).
template <class V>
struct Maddubs : V {  // pmaddubsw pairs fit int16: 2·128·127 < 32767
  using I = typename V::I;
  using Xop = I;
  static constexpr int kBias = 0;
  static I xop(I x) { return x; }
  static I start(I) { return V::zero(); }
  static I bias8(I w) { return w; }
  static I udot(I acc, I u8, I s8) { return V::add32(acc, V::maddubs(u8, s8)); }
  static I dot8(I acc, I w, I x) { return udot(acc, V::abs8(w), V::sign8(x, w)); }
};
template <class V>
struct Vnni : V {
  using I = typename V::I;
  using Xop = I;
  static constexpr int kBias = 128;
  static I xop(I x) { return x; }
  static I start(I x) { return V::dpbusd(V::zero(), V::set8(char(0x80)), V::sub8(V::zero(), x)); }  // −128·Σx
  static I bias8(I w) { return V::xor_(w, V::set8(char(0x80))); }
  static I udot(I acc, I u8, I s8) { return V::dpbusd(acc, u8, s8); }
  static I dot8(I acc, I w, I x) { return V::dpbusd(acc, w, x); }
};

// The driver's float part (kernels/panel_driver.h): 16 rows in 64 / kBytes registers, no FMA.
template <class V>
struct Width {
  static constexpr int kTokens = V::kTokens, kRegs = 64 / V::kBytes, kLanes = V::kBytes / 4;
  struct Sums {
    typename V::I v[kRegs];
  };
  struct Acc {
    typename V::F v[kRegs];
  };
  static Acc zero() { return {}; }
  static Acc fold(Acc a, const Sums &s, const float *d, float dx) {  // a + (cvt(s)·d)·dx
    for (int k = 0; k < kRegs; ++k)
      a.v[k] = V::addf(a.v[k], V::mulf(V::mulf(V::cvt(s.v[k]), V::loadf(d + kLanes * k)), V::set1f(dx)));
    return a;
  }
  static Acc add(Acc a, const Acc &b) {
    for (int k = 0; k < kRegs; ++k) a.v[k] = V::addf(a.v[k], b.v[k]);
    return a;
  }
  static void store(float *y, const Acc &a, int lo, int hi) {  // rows [lo, hi) of the panel
    float t[16];
    float *out = lo == 0 && hi == 16 ? y : t;
    for (int k = 0; k < kRegs; ++k) V::storef(out + kLanes * k, a.v[k]);
    if (out == t) std::memcpy(y + lo, t + lo, sizeof(float) * size_t(hi - lo));
  }
};

// The driver's integer part on panels. x: its 8 quads, each broadcast to every lane. Weights: at
// 512 bits a block's 8 registers are loaded (and offset or unpacked) once for the kTokens tokens;
// narrower, 8 · kRegs registers would not fit, so they are read where they lie, a register at a
// time, once for the matmul's kTokens tokens (dots). Q8: 8 units, sum started from −kBias·Σx; Q4:
// 4 units of nibbles n, unsigned already, Σ n·x started from −8·Σx (low nibbles are quads 0-3,
// high 4-7).
template <class Isa>
struct PanelInt {
  using I = typename Isa::I;
  static constexpr int kRegs = 64 / Isa::kBytes;
  static constexpr bool kHold = kRegs == 1;
  using Sums = typename Width<Isa>::Sums;
  // At 512 bits the dot reads x's quads from memory (V512::dpbusd_x4), so x is its address.
  static constexpr bool kBcst = Isa::kBytes == 64;
  struct XAt {  // 512 bits: where the quads are
    const int8_t *xb;
    int32_t s;
  };
  struct XQuads {  // narrower: the 8 quads broadcast
    I xq[8];
    int32_t s;
  };
  using X = std::conditional_t<kBcst, XAt, XQuads>;
  template <bool Q4>  // the same x for both weight types
  static X prep(const int8_t *xb, int32_t s) {
    X p;
    p.s = s;
    if constexpr (kBcst) {
      p.xb = xb;
    } else {
      for (int u = 0; u < 8; ++u) {
        int32_t quad;
        std::memcpy(&quad, xb + 4 * u, 4);
        p.xq[u] = Isa::set32(quad);
      }
    }
    return p;
  }
  template <bool Q4>  // weight registers j and j + 4 (for xq[j], xq[j + 4]) of slice h
  static void vec2(const uint8_t *units, int j, int h, I &lo, I &hi) {
    const I z = Isa::load(units + 64 * j + Isa::kBytes * h);
    if constexpr (Q4) {
      lo = Isa::and_(z, Isa::set8(0x0F)), hi = Isa::and_(Isa::srli4(z), Isa::set8(0x0F));
    } else {
      lo = Isa::bias8(z), hi = Isa::bias8(Isa::load(units + 64 * (j + 4) + Isa::kBytes * h));
    }
  }
  template <bool Q4>
  struct Wq {
    const uint8_t *units;
    I v[kHold ? 8 : 1];
  };
  template <bool Q4>
  static Wq<Q4> load(const uint8_t *units) {
    Wq<Q4> w{units, {}};
    if constexpr (kHold)
      for (int j = 0; j < 4; ++j) vec2<Q4>(units, j, 0, w.v[j], w.v[j + 4]);
    return w;
  }
  // ml_bench peak (kernels/panel_driver.h, driver::peak): chains of the dot instruction, kBytes
  // int8 multiply-adds each, as many as the registers hold beside the operands (32 zmm, 16 xmm or
  // ymm). vpdpbusd accumulates in place, so its operands may be loop-invariant; pmaddubsw's product
  // would be hoisted, so there the accumulator is the signed operand.
  static int64_t peak_dots(int64_t iters, int32_t *sink) {
    constexpr int kChains = Isa::kBytes == 64 ? 16 : 12;
    I acc[kChains];
    const I w = Isa::set8(char(3 + *sink)), x = Isa::set8(char(5 - *sink));
    for (int k = 0; k < kChains; ++k) acc[k] = Isa::set32(k + 1);
    for (int64_t i = 0; i < iters; ++i)
      for (int k = 0; k < kChains; ++k) acc[k] = Isa::udot(acc[k], w, Isa::kBias ? x : acc[k]);
    I s = acc[0];
    for (int k = 1; k < kChains; ++k) s = Isa::xor_(s, acc[k]);
    alignas(64) int32_t lanes[Isa::kBytes / 4];
    std::memcpy(lanes, &s, sizeof lanes);
    *sink = lanes[0];
    return iters * kChains * Isa::kBytes;
  }
  static Wq<false> load_q8(const int8_t *units) { return load<false>(reinterpret_cast<const uint8_t *>(units)); }
  static Wq<true> load_q4(const uint8_t *units) { return load<true>(units); }
  // A block against T tokens' x: each weight register is loaded (and offset or unpacked) once for
  // the T tokens. dot() is T = 1; a matmul calls dots() (kernels/panel_driver.h, HasDots) where the
  // weights are read where they lie, below 512 bits — held weights are loaded once anyway.
  template <int T, bool Q4>
  static void dots_of(const Wq<Q4> &w, const X *x, Sums *out) {
    for (int h = 0; h < kRegs; ++h) {
      // Two chains a token (units 0-3 and 4-7), added at the end: half the latency of one of 8.
      I acc[T], acc2[T];
      for (int t = 0; t < T; ++t) acc[t] = Isa::set32((Q4 ? -8 : -Isa::kBias) * x[t].s), acc2[t] = Isa::zero();
      for (int j = 0; j < 4; ++j) {
        I lo, hi;
        if constexpr (kHold)
          lo = w.v[j], hi = w.v[j + 4];
        else
          vec2<Q4>(w.units, j, h, lo, hi);
        for (int t = 0; t < T; ++t) {
          if constexpr (kBcst) {  // vpdpbusd: udot and dot8 are the same instruction
            acc[t] = Isa::dpbusd_x4(acc[t], lo, x[t].xb + 4 * j);
            acc2[t] = Isa::dpbusd_x4(acc2[t], hi, x[t].xb + 4 * (j + 4));
          } else {
            acc[t] = Q4 ? Isa::udot(acc[t], lo, x[t].xq[j]) : Isa::dot8(acc[t], lo, x[t].xq[j]);
            acc2[t] = Q4 ? Isa::udot(acc2[t], hi, x[t].xq[j + 4]) : Isa::dot8(acc2[t], hi, x[t].xq[j + 4]);
          }
        }
      }
      for (int t = 0; t < T; ++t) out[t].v[h] = Isa::add32(acc[t], acc2[t]);
    }
  }
  template <int T, bool Q4, bool H = kHold, std::enable_if_t<!H, int> = 0>
  static void dots(const Wq<Q4> &w, const X *x, Sums *out) {
    dots_of<T>(w, x, out);
  }
  template <bool Q4>
  static Sums dot(const Wq<Q4> &w, const X &x) {
    Sums out;
    dots_of<1>(w, &x, &out);
    return out;
  }
};

// Layout 0 (rows): rows go 4 at a time (x prepared once per group of 4 blocks, reused by the 4
// rows); the row tail and the block tail (nb % 4, zero-padded copies, so nothing is read past an
// array) run through the same code. sums of 4 blocks: one register of x and w per kBytes, then
// reduce4. Float part: one __m128 per row, lane b mod 4, then f4::total, the canonical combine (simd/f32x4.h).
template <class Isa>
struct Rows {
  using I = typename Isa::I;
  static constexpr int kN = 128 / Isa::kBytes;
  struct X {
    typename Isa::Xop x[kN];
    I c[kN];
  };
  static X load_x(const int8_t *xq) {
    X p;
    for (int i = 0; i < kN; ++i) {
      const I v = Isa::load(xq + Isa::kBytes * i);
      p.x[i] = Isa::xop(v);
      p.c[i] = Isa::start(v);
    }
    return p;
  }
  template <bool Q4>
  static __m128i sums(const uint8_t *w, const X &x) {  // w: 4 blocks (Q8 128 bytes, Q4 64)
    I v[kN];
    if constexpr (Q4) Isa::nibbles(w, v);
    for (int i = 0; i < kN; ++i) {
      const I wi = Q4 ? Isa::add8(v[i], Isa::set8(char(Isa::kBias - 8))) : Isa::bias8(Isa::load(w + Isa::kBytes * i));
      v[i] = Isa::dot8(x.c[i], wi, x.x[i]);
    }
    return Isa::reduce4(v);
  }
  template <bool Q4, int R>
  static void tile(float *y, const ml_qtensor *W, const ml_qact *x, int r) {
    constexpr int kBlockBytes = Q4 ? ML_QK / 2 : ML_QK;
    const int nb = W->cols / ML_QK, nb4 = nb & ~3;
    const uint8_t *w[R];
    const float *dw[R];
    __m128 acc[R];
    for (int i = 0; i < R; ++i) {
      w[i] = static_cast<const uint8_t *>(W->q) + size_t(r + i) * nb * kBlockBytes;
      dw[i] = W->d + size_t(r + i) * nb;
      acc[i] = _mm_setzero_ps();
    }
    auto step = [&](const int8_t *xq, const float *xd, const uint8_t *const *wp, const float *const *dwp) {
      const X xp = load_x(xq);
      const __m128 dx = _mm_loadu_ps(xd);
      for (int i = 0; i < R; ++i)
        acc[i] = _mm_add_ps(acc[i], _mm_mul_ps(_mm_mul_ps(_mm_cvtepi32_ps(sums<Q4>(wp[i], xp)), _mm_loadu_ps(dwp[i])), dx));
    };
    const uint8_t *wp[R];
    const float *dwp[R];
    for (int b = 0; b < nb4; b += 4) {
      for (int i = 0; i < R; ++i) {
        wp[i] = w[i] + size_t(b) * kBlockBytes;
        dwp[i] = dw[i] + b;
      }
      step(x->q + b * ML_QK, x->d + b, wp, dwp);
    }
    if (nb4 < nb) {  // 1-3 blocks left: zero-padded copies (padded blocks add exactly +0)
      const int rem = nb - nb4;
      alignas(64) int8_t xq[4 * ML_QK] = {};
      alignas(16) float xd[4] = {}, dwb[R][4] = {};
      alignas(64) uint8_t wb[R][4 * kBlockBytes];
      std::memcpy(xq, x->q + nb4 * ML_QK, size_t(rem) * ML_QK);
      std::memcpy(xd, x->d + nb4, sizeof(float) * size_t(rem));
      for (int i = 0; i < R; ++i) {
        std::memset(wb[i], Q4 ? 0x88 : 0, sizeof wb[i]);
        std::memcpy(wb[i], w[i] + size_t(nb4) * kBlockBytes, size_t(rem) * kBlockBytes);
        std::memcpy(dwb[i], dw[i] + nb4, sizeof(float) * size_t(rem));
        wp[i] = wb[i];
        dwp[i] = dwb[i];
      }
      step(xq, xd, wp, dwp);
    }
    for (int i = 0; i < R; ++i) y[r + i] = f4::total(acc[i]);
  }
  template <bool Q4>
  static void matvec(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    int r = r0;
    for (; r + 4 <= r1; r += 4) tile<Q4, 4>(y, W, x, r);
    for (; r < r1; ++r) tile<Q4, 1>(y, W, x, r);
  }
  static void q8(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) { matvec<false>(y, W, x, r0, r1); }
  static void q4(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) { matvec<true>(y, W, x, r0, r1); }
};

}  // namespace ml::x86
