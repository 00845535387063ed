// sse41 override: matvec_q8, matvec_q4. Block sums with SSSE3's byte multiply: pabsb(w),
// psignb(x, w) → pmaddubsw (|w|·±x, pairs fit int16: 2·127·127 < 32767) → pmaddwd(·, 1) → int32;
// four blocks reduced at once. Loop and float order: kernels/x86/matvec_x86.h (bit-identical to
// kernels/scalar/matvec.cc; tests: verify/kernel_checks.cc). Q4 unpacks to int8 and reuses Q8.
#include <tmmintrin.h>

#include "kernels/kernels.h"
#include "kernels/x86/matvec_x86.h"

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

}  // namespace

extern "C" void ml_k_matvec_q8_sse41(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  ml::x86::matvec<Sse41, false>(y, W, x, r0, r1);
}

extern "C" void ml_k_matvec_q4_sse41(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  ml::x86::matvec<Sse41, true>(y, W, x, r0, r1);
}
