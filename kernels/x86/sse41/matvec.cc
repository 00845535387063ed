// sse41 override: matvec_q8, matvec_q4. Block sums with SSSE3's byte multiply: pabsb(w),
// psignb(x, w) → pmaddubsw (|w|·±x, pairs fit int16: 2·127·127 < 32767) → pmaddwd(·, 1) → int32;
// four blocks reduced at once. Loop and float order: kernels/x86/matvec_x86.h (bit-identical to
// kernels/scalar/matvec.cc; tests: verify/kernel_checks.cc). Q4 unpacks to int8 and reuses Q8.
#include <tmmintrin.h>

#include <cstring>

#include "kernels/kernels.h"
#include "kernels/x86/matvec_x86.h"
#include "kernels/x86/panel_x86.h"

namespace {

using namespace ml::x86;

struct Sse41 {
  struct X {
    __m128i x[8];
  };
  static X load_x(const int8_t *x) {
    X p;
    for (int k = 0; k < 8; ++k) p.x[k] = _mm_loadu_si128(reinterpret_cast<const __m128i *>(x + 16 * k));
    return p;
  }
  static __m128i dot16(__m128i w, __m128i x) {
    return _mm_madd_epi16(_mm_maddubs_epi16(_mm_abs_epi8(w), _mm_sign_epi8(x, w)), _mm_set1_epi16(1));
  }
  static __m128i sums_q8(const int8_t *w, const X &x) {
    __m128i v[4];
    for (int b = 0; b < 4; ++b)
      v[b] = _mm_add_epi32(dot16(_mm_loadu_si128(reinterpret_cast<const __m128i *>(w + 32 * b)), x.x[2 * b]),
                           dot16(_mm_loadu_si128(reinterpret_cast<const __m128i *>(w + 32 * b + 16)), x.x[2 * b + 1]));
    return hsum4x4(v[0], v[1], v[2], v[3]);
  }
  static __m128i sums_q4(const uint8_t *w, const X &x) {
    __m128i v[4];
    for (int b = 0; b < 4; ++b) {
      __m128i lo, hi;
      unpack_q4_sse2(w + 16 * b, &lo, &hi);
      v[b] = _mm_add_epi32(dot16(lo, x.x[2 * b]), dot16(hi, x.x[2 * b + 1]));
    }
    return hsum4x4(v[0], v[1], v[2], v[3]);
  }
};

// Panels (layout 1): 16 bytes of a unit are 4 rows × 4 weights; pmaddubsw against x's quad
// broadcast, pmaddwd by 1: one int32 per row. Q4 nibbles are unsigned already (Σ n·x − 8·Σx).
struct Sse41Panel {
  using Sums = Width128::Sums;
  struct X {
    __m128i xq[8];
    int32_t s;
  };
  template <bool Q4>  // the same x for both weight types
  static X prep(const int8_t *xb, int32_t s) {
    X p;
    p.s = s;
    for (int u = 0; u < 8; ++u) {
      int32_t quad;
      std::memcpy(&quad, xb + 4 * u, 4);
      p.xq[u] = _mm_set1_epi32(quad);
    }
    return p;
  }
  static __m128i udot(__m128i u8, __m128i s8) { return _mm_madd_epi16(_mm_maddubs_epi16(u8, s8), _mm_set1_epi16(1)); }
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
    for (int k = 0; k < 4; ++k) {
      __m128i acc = _mm_setzero_si128();
      for (int u = 0; u < 8; ++u) {
        const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i *>(units + 64 * u + 16 * k));
        acc = _mm_add_epi32(acc, udot(_mm_abs_epi8(w), _mm_sign_epi8(x.xq[u], w)));
      }
      out.v[k] = acc;
    }
    return out;
  }
  static Sums dot(const Wq4 &w, const X &x) {
    const uint8_t *units = w.units;
    Sums out;
    const __m128i m = _mm_set1_epi8(0x0F);
    for (int k = 0; k < 4; ++k) {
      __m128i acc = _mm_set1_epi32(-8 * x.s);
      for (int j = 0; j < 4; ++j) {
        const __m128i z = _mm_loadu_si128(reinterpret_cast<const __m128i *>(units + 64 * j + 16 * k));
        acc = _mm_add_epi32(acc, udot(_mm_and_si128(z, m), x.xq[j]));
        acc = _mm_add_epi32(acc, udot(_mm_and_si128(_mm_srli_epi16(z, 4), m), x.xq[4 + j]));
      }
      out.v[k] = acc;
    }
    return out;
  }
};

}  // namespace

extern "C" void ml_k_matvec_q8_sse41(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  if (W->layout == ML_LAYOUT_PANEL16)
    ml::x86::panel_matvec<Width128, Sse41Panel, false>(y, W, x, r0, r1);
  else
    ml::x86::matvec<Sse41, false>(y, W, x, r0, r1);
}

extern "C" void ml_k_matmul_q8_sse41(float *Y, size_t ldy, const ml_qtensor *W, const ml_qact *X, int m, int r0,
                                   int r1) {
  if (W->layout == ML_LAYOUT_PANEL16)
    ml::x86::panel_matmul<Width128, Sse41Panel, false>(Y, ldy, W, X, m, r0, r1);
  else
    ml::x86::matmul_rows(ml_k_matvec_q8_sse41, Y, ldy, W, X, m, r0, r1);
}

extern "C" void ml_k_matvec_q4_sse41(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  if (W->layout == ML_LAYOUT_PANEL16)
    ml::x86::panel_matvec<Width128, Sse41Panel, true>(y, W, x, r0, r1);
  else
    ml::x86::matvec<Sse41, true>(y, W, x, r0, r1);
}

extern "C" void ml_k_matmul_q4_sse41(float *Y, size_t ldy, const ml_qtensor *W, const ml_qact *X, int m, int r0,
                                   int r1) {
  if (W->layout == ML_LAYOUT_PANEL16)
    ml::x86::panel_matmul<Width128, Sse41Panel, true>(Y, ldy, W, X, m, r0, r1);
  else
    ml::x86::matmul_rows(ml_k_matvec_q4_sse41, Y, ldy, W, X, m, r0, r1);
}
