// avx512vnni override: matvec_q8, matvec_q4 with 512-bit vpdpbusd, two blocks per instruction.
// Same offset trick as kernels/x86/avxvnni/matvec.cc ((w ^ 0x80) against x, accumulator started at
// c = vpdpbusd(0, 128, −x) once per x block pair). The two 16-lane results of four blocks are
// folded to one int32 per block with 128-bit-chunk shuffles (reduce4). Loop and float order:
// kernels/x86/matvec_x86.h (bit-identical to kernels/scalar/matvec.cc).
#include <immintrin.h>

#include <cstring>

#include "kernels/kernels.h"
#include "kernels/x86/matvec_x86.h"
#include "kernels/x86/panel_x86.h"

namespace {

using namespace ml::x86;

struct Avx512Vnni {
  struct X {
    __m512i x[2], c[2];  // blocks (0, 1) and (2, 3)
  };
  static X load_x(const int8_t *x) {
    X p;
    const __m512i k128 = _mm512_set1_epi8(char(0x80));
    for (int k = 0; k < 2; ++k) {
      p.x[k] = _mm512_loadu_si512(x + 64 * k);
      p.c[k] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), k128, _mm512_sub_epi8(_mm512_setzero_si512(), p.x[k]));
    }
    return p;
  }
  // v01 = lanes of blocks 0 (chunks 0-1) and 1 (chunks 2-3); v23 likewise → [Σ0, Σ1, Σ2, Σ3]
  static __m128i reduce4(__m512i v01, __m512i v23) {
    __m512i s = _mm512_add_epi32(_mm512_shuffle_i32x4(v01, v23, _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm512_shuffle_i32x4(v01, v23, _MM_SHUFFLE(3, 1, 3, 1)));  // chunk k: block k
    s = _mm512_add_epi32(s, _mm512_shuffle_epi32(s, _MM_PERM_CDAB));
    s = _mm512_add_epi32(s, _mm512_shuffle_epi32(s, _MM_PERM_BADC));  // every lane: its chunk's sum
    return _mm512_castsi512_si128(_mm512_permutexvar_epi32(_mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 8, 4, 0), s));
  }
  static __m128i sums_q8(const int8_t *w, const X &x) {
    const __m512i k128 = _mm512_set1_epi8(char(0x80));
    const __m512i v01 = _mm512_dpbusd_epi32(x.c[0], _mm512_xor_si512(_mm512_loadu_si512(w), k128), x.x[0]);
    const __m512i v23 = _mm512_dpbusd_epi32(x.c[1], _mm512_xor_si512(_mm512_loadu_si512(w + 64), k128), x.x[1]);
    return reduce4(v01, v23);
  }
  // Two Q4_0 blocks (32 bytes) → [blk0 elements 0-15, 16-31, blk1 0-15, 16-31] as n + 120.
  static __m512i unpack2(const uint8_t *q) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(q));
    const __m256i m = _mm256_set1_epi8(0x0F);
    const __m512i t = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(v, m)),
                                         _mm256_and_si256(_mm256_srli_epi16(v, 4), m), 1);
    return _mm512_add_epi8(_mm512_shuffle_i64x2(t, t, _MM_SHUFFLE(3, 1, 2, 0)), _mm512_set1_epi8(120));
  }
  static __m128i sums_q4(const uint8_t *w, const X &x) {
    return reduce4(_mm512_dpbusd_epi32(x.c[0], unpack2(w), x.x[0]), _mm512_dpbusd_epi32(x.c[1], unpack2(w + 32), x.x[1]));
  }
};

// 16 panel rows in one 512-bit register (kernels/x86/panel_x86.h).
struct Width512 {
  static constexpr int kTokens = 4;  // 4 tokens × 4 partial sums + 8 weight registers fit in 32 zmm
  struct Sums {
    __m512i v;
  };
  struct Acc {
    __m512 v;
  };
  static Acc zero() { return {_mm512_setzero_ps()}; }
  static Acc fold(Acc a, const Sums &s, const float *d, float dx) {  // a + (cvt(s)·d)·dx, no FMA
    return {_mm512_add_ps(a.v, _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(s.v), _mm512_loadu_ps(d)), _mm512_set1_ps(dx)))};
  }
  static Acc add(Acc a, const Acc &b) { return {_mm512_add_ps(a.v, b.v)}; }
  static void store(float *y, const Acc &a, int lo, int hi) {
    _mm512_mask_storeu_ps(y, __mmask16(((1u << hi) - 1u) & ~((1u << lo) - 1u)), a.v);
  }
};

// Panels (layout 1): a 64-byte unit is 16 rows × 4 weights; one vpdpbusd against x's quad
// broadcast adds all 4 products into the row's lane. Q8 with the 128 offset, started from
// −128·Σx; Q4 nibbles are unsigned already, started from −8·Σx.
struct Avx512Panel {
  using Sums = Width512::Sums;
  struct X {
    __m512i xq[8];
    int32_t s;
  };
  template <bool Q4>  // the same x for both weight types
  static X prep(const int8_t *xb, int32_t s) {
    X p;
    p.s = s;
    for (int u = 0; u < 8; ++u) {
      int32_t quad;
      std::memcpy(&quad, xb + 4 * u, 4);
      p.xq[u] = _mm512_set1_epi32(quad);
    }
    return p;
  }
  // A block's weights in registers, ready for vpdpbusd: Q8 offset by 128, Q4 as 8 nibble vectors.
  struct Wq8 {
    __m512i u[8];
  };
  struct Wq4 {
    __m512i n[8];  // n[j] = elements 4j..4j+3 (j < 4) and 16+4(j-4).. (j >= 4) of each row
  };
  static Wq8 load_q8(const int8_t *units) {
    const __m512i k128 = _mm512_set1_epi8(char(0x80));
    Wq8 w;
    for (int u = 0; u < 8; ++u) w.u[u] = _mm512_xor_si512(_mm512_loadu_si512(units + 64 * u), k128);
    return w;
  }
  static Wq4 load_q4(const uint8_t *units) {
    const __m512i m = _mm512_set1_epi8(0x0F);
    Wq4 w;
    for (int j = 0; j < 4; ++j) {
      const __m512i z = _mm512_loadu_si512(units + 64 * j);
      w.n[j] = _mm512_and_si512(z, m);
      w.n[4 + j] = _mm512_and_si512(_mm512_srli_epi16(z, 4), m);
    }
    return w;
  }
  static Sums dot(const Wq8 &w, const X &x) {
    __m512i acc = _mm512_set1_epi32(-128 * x.s);
    for (int u = 0; u < 8; ++u) acc = _mm512_dpbusd_epi32(acc, w.u[u], x.xq[u]);
    return {acc};
  }
  static Sums dot(const Wq4 &w, const X &x) {
    __m512i acc = _mm512_set1_epi32(-8 * x.s);
    for (int j = 0; j < 8; ++j) acc = _mm512_dpbusd_epi32(acc, w.n[j], x.xq[j]);
    return {acc};
  }
};

}  // namespace

extern "C" void ml_k_matvec_q8_avx512vnni(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  if (W->layout == ML_LAYOUT_PANEL16)
    ml::x86::panel_matvec<Width512, Avx512Panel, false>(y, W, x, r0, r1);
  else
    ml::x86::matvec<Avx512Vnni, false>(y, W, x, r0, r1);
}

extern "C" void ml_k_matmul_q8_avx512vnni(float *Y, size_t ldy, const ml_qtensor *W, const ml_qact *X, int m, int r0,
                                   int r1) {
  if (W->layout == ML_LAYOUT_PANEL16)
    ml::x86::panel_matmul<Width512, Avx512Panel, false>(Y, ldy, W, X, m, r0, r1);
  else
    ml::x86::matmul_rows(ml_k_matvec_q8_avx512vnni, Y, ldy, W, X, m, r0, r1);
}

extern "C" void ml_k_matvec_q4_avx512vnni(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  if (W->layout == ML_LAYOUT_PANEL16)
    ml::x86::panel_matvec<Width512, Avx512Panel, true>(y, W, x, r0, r1);
  else
    ml::x86::matvec<Avx512Vnni, true>(y, W, x, r0, r1);
}

extern "C" void ml_k_matmul_q4_avx512vnni(float *Y, size_t ldy, const ml_qtensor *W, const ml_qact *X, int m, int r0,
                                   int r1) {
  if (W->layout == ML_LAYOUT_PANEL16)
    ml::x86::panel_matmul<Width512, Avx512Panel, true>(Y, ldy, W, X, m, r0, r1);
  else
    ml::x86::matmul_rows(ml_k_matvec_q4_avx512vnni, Y, ldy, W, X, m, r0, r1);
}
