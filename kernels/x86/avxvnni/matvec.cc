// avxvnni override: matvec_q8, matvec_q4 with vpdpbusd at 256 bits (one block per register).
// vpdpbusd multiplies unsigned by signed bytes, so weights are offset by 128: (w ^ 0x80) = w + 128,
// and the excess 128·Σx is removed by starting the accumulator at c = vpdpbusd(0, 128, −x),
// computed once per x block for all rows: c + Σ (w + 128)·x = Σ w·x exactly. Q4 nibbles n give
// n − 8 + 128 = n + 120 directly. Four blocks reduced with vphaddd. Loop and float order:
// kernels/x86/matvec_x86.h (bit-identical to kernels/scalar/matvec.cc).
//
// In the avx512vnni build (whose flags enable AVX512-VNNI+VL but not AVX-VNNI) the same code uses
// the EVEX encoding of the 256-bit vpdpbusd: dpbusd() below is the only difference.
#include <immintrin.h>

#include "kernels/kernels.h"
#include "kernels/x86/avx256.h"
#include "kernels/x86/matvec_x86.h"
#include "kernels/x86/panel_x86.h"

namespace {

using namespace ml::x86;

inline __m256i dpbusd(__m256i acc, __m256i u8, __m256i s8) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpbusd_epi32(acc, u8, s8);
#else
  return _mm256_dpbusd_avx_epi32(acc, u8, s8);
#endif
}

struct AvxVnni {
  struct X {
    __m256i x[4], c[4];
  };
  static X load_x(const int8_t *x) {
    X p;
    const __m256i k128 = _mm256_set1_epi8(char(0x80));
    for (int b = 0; b < 4; ++b) {
      p.x[b] = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(x + 32 * b));
      p.c[b] = dpbusd(_mm256_setzero_si256(), k128, _mm256_sub_epi8(_mm256_setzero_si256(), p.x[b]));
    }
    return p;
  }
  static __m128i sums_q8(const int8_t *w, const X &x) {
    const __m256i k128 = _mm256_set1_epi8(char(0x80));
    __m256i v[4];
    for (int b = 0; b < 4; ++b)
      v[b] = dpbusd(x.c[b], _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(w + 32 * b)), k128),
                    x.x[b]);
    return hsum4x8(v[0], v[1], v[2], v[3]);
  }
  static __m128i sums_q4(const uint8_t *w, const X &x) {
    __m256i v[4];
    for (int b = 0; b < 4; ++b) v[b] = dpbusd(x.c[b], _mm256_add_epi8(nibbles_q4(w + 16 * b), _mm256_set1_epi8(120)), x.x[b]);
    return hsum4x8(v[0], v[1], v[2], v[3]);
  }
};

// Panels (layout 1): a 32-byte half unit is 8 rows × 4 weights; one vpdpbusd against x's quad
// broadcast adds all 4 products into the row's lane. Q8 offset as above, started from −128·Σx;
// Q4 nibbles are unsigned already, started from −8·Σx.
struct AvxVnniPanel {
  using Sums = Width256::Sums;
  struct X {
    __m256i xq[8];
    int32_t s;
  };
  template <bool Q4>  // the same x for both weight types
  static X prep(const int8_t *xb, int32_t s) {
    X p;
    p.s = s;
    for (int u = 0; u < 8; ++u) p.xq[u] = bcast_quad256(xb, u);
    return p;
  }
  // Weights are read where they lie (from L1 for the second token of a batch).
  struct Wq8 {
    const int8_t *units;
  };
  struct Wq4 {
    const uint8_t *units;
  };
  static Wq8 load_q8(const int8_t *units) { return {units}; }
  static Wq4 load_q4(const uint8_t *units) { return {units}; }
  static Sums dot(const Wq8 &w, const X &x) {
    const int8_t *units = w.units;
    const __m256i k128 = _mm256_set1_epi8(char(0x80));
    Sums out;
    for (int h = 0; h < 2; ++h) {
      __m256i acc = _mm256_set1_epi32(-128 * x.s);
      for (int u = 0; u < 8; ++u)
        acc = dpbusd(acc, _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(units + 64 * u + 32 * h)), k128),
                     x.xq[u]);
      out.v[h] = acc;
    }
    return out;
  }
  static Sums dot(const Wq4 &w, const X &x) {
    const uint8_t *units = w.units;
    const __m256i m = _mm256_set1_epi8(0x0F);
    Sums out;
    for (int h = 0; h < 2; ++h) {
      __m256i acc = _mm256_set1_epi32(-8 * x.s);
      for (int j = 0; j < 4; ++j) {
        const __m256i z = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(units + 64 * j + 32 * h));
        acc = dpbusd(acc, _mm256_and_si256(z, m), x.xq[j]);
        acc = dpbusd(acc, _mm256_and_si256(_mm256_srli_epi16(z, 4), m), x.xq[4 + j]);
      }
      out.v[h] = acc;
    }
    return out;
  }
};

}  // namespace

extern "C" void ml_k_matvec_q8_avxvnni(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  if (W->layout == ML_LAYOUT_PANEL16)
    ml::x86::panel_matvec<Width256, AvxVnniPanel, false>(y, W, x, r0, r1);
  else
    ml::x86::matvec<AvxVnni, false>(y, W, x, r0, r1);
}

extern "C" void ml_k_matmul_q8_avxvnni(float *Y, size_t ldy, const ml_qtensor *W, const ml_qact *X, int m, int r0,
                                   int r1) {
  if (W->layout == ML_LAYOUT_PANEL16)
    ml::x86::panel_matmul<Width256, AvxVnniPanel, false>(Y, ldy, W, X, m, r0, r1);
  else
    ml::x86::matmul_rows(ml_k_matvec_q8_avxvnni, Y, ldy, W, X, m, r0, r1);
}

extern "C" void ml_k_matvec_q4_avxvnni(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  if (W->layout == ML_LAYOUT_PANEL16)
    ml::x86::panel_matvec<Width256, AvxVnniPanel, true>(y, W, x, r0, r1);
  else
    ml::x86::matvec<AvxVnni, true>(y, W, x, r0, r1);
}

extern "C" void ml_k_matmul_q4_avxvnni(float *Y, size_t ldy, const ml_qtensor *W, const ml_qact *X, int m, int r0,
                                   int r1) {
  if (W->layout == ML_LAYOUT_PANEL16)
    ml::x86::panel_matmul<Width256, AvxVnniPanel, true>(Y, ldy, W, X, m, r0, r1);
  else
    ml::x86::matmul_rows(ml_k_matvec_q4_avxvnni, Y, ldy, W, X, m, r0, r1);
}
