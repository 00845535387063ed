// avx512vnni override: matvec_q8, matvec_q4 with 512-bit vpdpbusd, two blocks per instruction.
// Same offset trick as kernels/x86/avxvnni/matvec.cc ((w ^ 0x80) against x, accumulator started at
// c = vpdpbusd(0, 128, −x) once per x block pair). The two 16-lane results of four blocks are
// folded to one int32 per block with 128-bit-chunk shuffles (reduce4). Loop and float order:
// kernels/x86/matvec_x86.h (bit-identical to kernels/scalar/matvec.cc).
#include <immintrin.h>

#include "kernels/kernels.h"
#include "kernels/x86/matvec_x86.h"

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

}  // namespace

extern "C" void ml_k_matvec_q8_avx512vnni(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  ml::x86::matvec<Avx512Vnni, false>(y, W, x, r0, r1);
}

extern "C" void ml_k_matvec_q4_avx512vnni(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  ml::x86::matvec<Avx512Vnni, true>(y, W, x, r0, r1);
}
