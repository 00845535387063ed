// avx2 override: matvec_q8, matvec_q4 at 256 bits: vpabsb(w), vpsignb(x, w) → vpmaddubsw →
// vpmaddwd(·, 1) → int32x8 per block; four blocks reduced with two rounds of vphaddd. Loop and
// float order: kernels/x86/matvec_x86.h (bit-identical to kernels/scalar/matvec.cc; tests:
// verify/kernel_checks.cc). The float part is 4 multiplies and an add per 4 blocks and row, so
// there is no fused multiply-add to use without changing the bits (kernels/kernels.h).
#include <immintrin.h>

#include "kernels/kernels.h"
#include "kernels/x86/avx256.h"
#include "kernels/x86/matvec_x86.h"
#include "kernels/x86/panel_x86.h"

namespace {

using namespace ml::x86;

struct Avx2 {
  struct X {
    __m256i x[4];
  };
  static X load_x(const int8_t *x) {
    X p;
    for (int b = 0; b < 4; ++b) p.x[b] = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(x + 32 * b));
    return p;
  }
  static __m256i dot32(__m256i w, __m256i x) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w)), _mm256_set1_epi16(1));
  }
  static __m128i sums_q8(const int8_t *w, const X &x) {
    __m256i v[4];
    for (int b = 0; b < 4; ++b) v[b] = dot32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(w + 32 * b)), x.x[b]);
    return hsum4x8(v[0], v[1], v[2], v[3]);
  }
  static __m128i sums_q4(const uint8_t *w, const X &x) {
    __m256i v[4];
    for (int b = 0; b < 4; ++b) v[b] = dot32(_mm256_sub_epi8(nibbles_q4(w + 16 * b), _mm256_set1_epi8(8)), x.x[b]);
    return hsum4x8(v[0], v[1], v[2], v[3]);
  }
};

// Panels (layout 1): a 32-byte half unit is 8 rows × 4 weights; vpmaddubsw against x's quad
// broadcast, vpmaddwd by 1: one int32 per row. Q4 nibbles are unsigned already (Σ n·x − 8·Σx).
struct Avx2Panel {
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
  static __m256i udot(__m256i u8, __m256i s8) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u8, s8), _mm256_set1_epi16(1));
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
    Sums out;
    for (int h = 0; h < 2; ++h) {
      __m256i acc = _mm256_setzero_si256();
      for (int u = 0; u < 8; ++u) {
        const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(units + 64 * u + 32 * h));
        acc = _mm256_add_epi32(acc, udot(_mm256_abs_epi8(w), _mm256_sign_epi8(x.xq[u], w)));
      }
      out.v[h] = acc;
    }
    return out;
  }
  static Sums dot(const Wq4 &w, const X &x) {
    const uint8_t *units = w.units;
    Sums out;
    const __m256i m = _mm256_set1_epi8(0x0F);
    for (int h = 0; h < 2; ++h) {
      __m256i acc = _mm256_set1_epi32(-8 * x.s);
      for (int j = 0; j < 4; ++j) {
        const __m256i z = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(units + 64 * j + 32 * h));
        acc = _mm256_add_epi32(acc, udot(_mm256_and_si256(z, m), x.xq[j]));
        acc = _mm256_add_epi32(acc, udot(_mm256_and_si256(_mm256_srli_epi16(z, 4), m), x.xq[4 + j]));
      }
      out.v[h] = acc;
    }
    return out;
  }
};

}  // namespace

extern "C" void ml_k_matvec_q8_avx2(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  if (W->layout == ML_LAYOUT_PANEL16)
    ml::x86::panel_matvec<Width256, Avx2Panel, false>(y, W, x, r0, r1);
  else
    ml::x86::matvec<Avx2, false>(y, W, x, r0, r1);
}

extern "C" void ml_k_matmul_q8_avx2(float *Y, size_t ldy, const ml_qtensor *W, const ml_qact *X, int m, int r0,
                                   int r1) {
  if (W->layout == ML_LAYOUT_PANEL16)
    ml::x86::panel_matmul<Width256, Avx2Panel, false>(Y, ldy, W, X, m, r0, r1);
  else
    ml::x86::matmul_rows(ml_k_matvec_q8_avx2, Y, ldy, W, X, m, r0, r1);
}

extern "C" void ml_k_matvec_q4_avx2(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  if (W->layout == ML_LAYOUT_PANEL16)
    ml::x86::panel_matvec<Width256, Avx2Panel, true>(y, W, x, r0, r1);
  else
    ml::x86::matvec<Avx2, true>(y, W, x, r0, r1);
}

extern "C" void ml_k_matmul_q4_avx2(float *Y, size_t ldy, const ml_qtensor *W, const ml_qact *X, int m, int r0,
                                   int r1) {
  if (W->layout == ML_LAYOUT_PANEL16)
    ml::x86::panel_matmul<Width256, Avx2Panel, true>(Y, ldy, W, X, m, r0, r1);
  else
    ml::x86::matmul_rows(ml_k_matvec_q4_avx2, Y, ldy, W, X, m, r0, r1);
}
