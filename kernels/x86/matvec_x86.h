// The one loop of every x86 quantized matvec (sse2, sse41, avx2, avxvnni, avx512vnni), written
// once; each ISA supplies only the integer part, a Traits type:
//
//   struct Traits {
//     struct X;                                        // x of 4 blocks, prepared once per tile
//     static X load_x(const int8_t *x);                // x: 128 bytes (4 blocks)
//     static __m128i sums_q8(const int8_t *w, const X &);   // w: 4 Q8_0 blocks (128 bytes)
//     static __m128i sums_q4(const uint8_t *w, const X &);  // w: 4 Q4_0 blocks (64 bytes)
//   };                                                 // → exact int32 sum of each block
//
// The float part is the canonical order of kernels/kernels.h, the same for all of them:
// t_b = (float(sumi_b) · dw_b) · dx_b added into lane b mod 4 of one __m128 per row, then
// (p0 + p1) + (p2 + p3) — so every x86 build gives the scalar reference's bits. Rows go 4 at a
// time (x prepared once per group of 4 blocks, reused by the 4 rows); the row tail and the block
// tail (nb % 4, zero-padded copies, so nothing is read past an array) run through the same code.
#pragma once
#include <emmintrin.h>

#include <cstring>

#include "kernels/kernels.h"
#include "kernels/x86/sum4_sse.h"

namespace ml::x86 {

template <class T, bool Q4, int Rows>
inline void matvec_tile(float *y, const ml_qtensor *W, const ml_qact *x, int r) {
  constexpr int kBlockBytes = Q4 ? ML_QK / 2 : ML_QK;
  const int nb = W->cols / ML_QK, nb4 = nb & ~3;
  const size_t row_bytes = size_t(nb) * kBlockBytes;
  const uint8_t *w[Rows];
  const float *dw[Rows];
  __m128 acc[Rows];
  for (int i = 0; i < Rows; ++i) {
    w[i] = static_cast<const uint8_t *>(W->q) + size_t(r + i) * row_bytes;
    dw[i] = W->d + size_t(r + i) * nb;
    acc[i] = _mm_setzero_ps();
  }
  auto step = [&](const int8_t *xq, const float *xd, const uint8_t *const *wp, const float *const *dwp) {
    const typename T::X xp = T::load_x(xq);
    const __m128 dx = _mm_loadu_ps(xd);
    for (int i = 0; i < Rows; ++i) {
      const __m128i s = Q4 ? T::sums_q4(wp[i], xp) : T::sums_q8(reinterpret_cast<const int8_t *>(wp[i]), xp);
      acc[i] = _mm_add_ps(acc[i], _mm_mul_ps(_mm_mul_ps(_mm_cvtepi32_ps(s), _mm_loadu_ps(dwp[i])), dx));
    }
  };
  for (int b = 0; b < nb4; b += 4) {
    const uint8_t *wp[Rows];
    const float *dwp[Rows];
    for (int i = 0; i < Rows; ++i) {
      wp[i] = w[i] + size_t(b) * kBlockBytes;
      dwp[i] = dw[i] + b;
    }
    step(x->q + b * ML_QK, x->d + b, wp, dwp);
  }
  if (nb4 < nb) {  // 1-3 blocks left: zero-padded copies (padded blocks add exactly +0)
    const int rem = nb - nb4;
    alignas(64) int8_t xq[4 * ML_QK] = {};
    alignas(16) float xd[4] = {}, dwb[Rows][4] = {};
    alignas(64) uint8_t wb[Rows][4 * kBlockBytes];
    std::memcpy(xq, x->q + nb4 * ML_QK, size_t(rem) * ML_QK);
    std::memcpy(xd, x->d + nb4, sizeof(float) * size_t(rem));
    const uint8_t *wp[Rows];
    const float *dwp[Rows];
    for (int i = 0; i < Rows; ++i) {
      std::memset(wb[i], Q4 ? 0x88 : 0, sizeof wb[i]);
      std::memcpy(wb[i], w[i] + size_t(nb4) * kBlockBytes, size_t(rem) * kBlockBytes);
      std::memcpy(dwb[i], dw[i] + nb4, sizeof(float) * size_t(rem));
      wp[i] = wb[i];
      dwp[i] = dwb[i];
    }
    step(xq, xd, wp, dwp);
  }
  for (int i = 0; i < Rows; ++i) y[r + i] = total4(acc[i]);
}

template <class T, bool Q4>
inline void matvec(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  int r = r0;
  for (; r + 4 <= r1; r += 4) matvec_tile<T, Q4, 4>(y, W, x, r);
  for (; r < r1; ++r) matvec_tile<T, Q4, 1>(y, W, x, r);
}

// matmul on layout 0 (rows): the ISA's matvec once per token (no reuse; the panel layout is the
// batched fast path).
template <class Matvec>
inline void matmul_rows(Matvec matvec, float *Y, size_t ldy, const ml_qtensor *W, const ml_qact *X, int m, int r0, int r1) {
  for (int t = 0; t < m; ++t) matvec(Y + size_t(t) * ldy, W, &X[t], r0, r1);
}

// 32 signed values (nibble − 8) of one Q4_0 block: low nibbles are elements 0-15, high 16-31.
inline void unpack_q4_sse2(const uint8_t *q, __m128i *lo, __m128i *hi) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(q));
  const __m128i m = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
  *lo = _mm_sub_epi8(_mm_and_si128(v, m), eight);
  *hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(v, 4), m), eight);
}

// [Σ a, Σ b, Σ c, Σ d] of four int32x4 vectors (integer adds: exact in any order).
inline __m128i hsum4x4(__m128i a, __m128i b, __m128i c, __m128i d) {
  const __m128i ab = _mm_add_epi32(_mm_unpacklo_epi32(a, b), _mm_unpackhi_epi32(a, b));  // a0+a2 b0+b2 a1+a3 b1+b3
  const __m128i cd = _mm_add_epi32(_mm_unpacklo_epi32(c, d), _mm_unpackhi_epi32(c, d));
  return _mm_add_epi32(_mm_unpacklo_epi64(ab, cd), _mm_unpackhi_epi64(ab, cd));
}

}  // namespace ml::x86
