// avx2 override: matvec_q8, matvec_q4 at 256 bits: vpabsb(w), vpsignb(x, w) → vpmaddubsw →
// vpmaddwd(·, 1) → int32x8 per block; four blocks reduced with two rounds of vphaddd. Loop and
// float order: kernels/x86/matvec_x86.h (bit-identical to kernels/scalar/matvec.cc; tests:
// verify/kernel_checks.cc). The float part is 4 multiplies and an add per 4 blocks and row, so
// there is no fused multiply-add to use without changing the bits (kernels/kernels.h).
#include <immintrin.h>

#include "kernels/kernels.h"
#include "kernels/x86/avx256.h"
#include "kernels/x86/matvec_x86.h"

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

}  // namespace

extern "C" void ml_k_matvec_q8_avx2(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  ml::x86::matvec<Avx2, false>(y, W, x, r0, r1);
}

extern "C" void ml_k_matvec_q4_avx2(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  ml::x86::matvec<Avx2, true>(y, W, x, r0, r1);
}
