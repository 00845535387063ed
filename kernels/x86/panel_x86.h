// The one loop of every x86 matvec and matmul on 16-row panels (layout 1, docs/mlb-format.md). A
// 64-byte unit holds the same 4 weights of 16 rows, so a vector lane is a row: one block's int32
// sums for the 16 rows of a panel come from 8 (Q8) or 4 (Q4) units without any horizontal
// reduction, and the float part runs 16 rows wide. Each ISA supplies a Width (register shapes and
// float ops at 128, 256 or 512 bits) and an Int part:
//
//   struct Int {
//     using Sums = Width::Sums;                               // 16 int32, one per row
//     template <bool Q4> static X prep(const int8_t *xb, int32_t s);  // x of one block (32
//                                          // bytes) + Σx, in the form dot() wants for Q4 or Q8
//     struct Wq8; static Wq8 load_q8(const int8_t *units);   // 8 units of 64 bytes, ready to use
//     struct Wq4; static Wq4 load_q4(const uint8_t *units);  // 4 units of 64 bytes
//     static Sums dot(const Wq8 &, const X &);  static Sums dot(const Wq4 &, const X &);
//   };
//
// A block of weights is loaded (and xor-ed or unpacked) once and used for T tokens at a time, so
// a prompt of m tokens reads the weights m/T times instead of m (matmul); matvec is T = 1.
// Canonical float order (kernels/kernels.h), per row and token: t_b = (float(sumi_b) · dw_b) · dx_b
// into partial b mod 4, then (p0 + p1) + (p2 + p3) — the scalar reference's bits.
#pragma once
#include <emmintrin.h>

#include <cstring>

#include "kernels/kernels.h"
#include "kernels/panel_driver.h"

namespace ml::x86 {

using driver::panel_matmul;  // the loop: kernels/panel_driver.h
using driver::panel_matvec;

// Width128: 16 rows as four 128-bit registers (sse2, sse41).
struct Width128 {
  static constexpr int kTokens = 2;
  struct Sums {
    __m128i v[4];
  };
  struct Acc {
    __m128 v[4];
  };
  static Acc zero() { return {{_mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps()}}; }
  static Acc fold(Acc a, const Sums &s, const float *d, float dx) {  // a + (cvt(s)·d)·dx
    const __m128 vdx = _mm_set1_ps(dx);
    for (int k = 0; k < 4; ++k)
      a.v[k] = _mm_add_ps(a.v[k], _mm_mul_ps(_mm_mul_ps(_mm_cvtepi32_ps(s.v[k]), _mm_loadu_ps(d + 4 * k)), vdx));
    return a;
  }
  static Acc add(Acc a, const Acc &b) {
    for (int k = 0; k < 4; ++k) a.v[k] = _mm_add_ps(a.v[k], b.v[k]);
    return a;
  }
  static void store(float *y, const Acc &a, int lo, int hi) {  // rows [lo, hi) of the panel
    alignas(16) float t[16];
    for (int k = 0; k < 4; ++k) _mm_store_ps(t + 4 * k, a.v[k]);
    std::memcpy(y + lo, t + lo, sizeof(float) * size_t(hi - lo));
  }
};

}  // namespace ml::x86
