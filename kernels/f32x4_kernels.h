// The float kernels of an override set whose float kernels are the 4-lane layer's bodies
// (simd/f32x4_math.h; exp: simd/exp.h's polynomial), bit-identical to kernels/scalar/ (attention.cc,
// elementwise.cc, rmsnorm.cc, rope.cc, softmax.cc). The ABI's symbols are C functions named for the
// set, so a macro: ML_F4_KERNELS(set) defines, for set = sse2,
//   ml_k_rmsnorm_sse2 ml_k_softmax_sse2 ml_k_rope_sse2 ml_k_silu_mul_sse2 ml_k_exp_f32_sse2
//   ml_k_dot_f32_sse2 ml_k_axpy_f32_sse2 ml_k_dot_f32_cols_sse2 ml_k_axpy_f32_rows_sse2
// and ML_F4_ADD(set) ml_k_add_sse2 (apart, so that a set can take add from assembly: ML_ASM).
// One line each in kernels/x86/sse2/f32x4.cc and kernels/riscv/rvv/f32x4.cc.
//   rmsnorm   ss = sum4(x·x), then o = w·(ss·x); o may alias x
//   softmax   in place: max, e = exp(x − max), s = sum4(e), x = e / s
//   rope      interleaved pairs, two per 4-lane vector
//   silu_mul, add, exp_f32   element-wise
//   dot_f32 (sum4 of a·b), axpy_f32 (y += a·x, product then sum), one row or several (_cols, _rows)
#pragma once
#include <stddef.h>

#include "kernels/kernels.h"
#include "simd/f32x4_math.h"

#define ML_F4_KERNELS(set)                                                                                          \
  extern "C" void ml_k_rmsnorm_##set(float *o, const float *x, const float *w, int n, float eps) {                  \
    ml::f4::rmsnorm(o, x, w, n, eps);                                                                               \
  }                                                                                                                 \
  extern "C" void ml_k_softmax_##set(float *x, int n) { ml::f4::softmax(x, n); }                                    \
  extern "C" void ml_k_rope_##set(float *q, float *k, const float *cos_t, const float *sin_t, int head_dim,         \
                                  int n_heads, int n_kv_heads) {                                                    \
    ml::f4::rope(q, k, cos_t, sin_t, head_dim, n_heads, n_kv_heads);                                                \
  }                                                                                                                 \
  extern "C" void ml_k_silu_mul_##set(float *g, const float *u, int n) { ml::f4::silu_mul(g, u, n); }               \
  extern "C" void ml_k_exp_f32_##set(float *y, const float *x, int n) { ml::f4::exp_f32(y, x, n); }                 \
  extern "C" float ml_k_dot_f32_##set(const float *a, const float *b, int n) { return ml::f4::dot(a, b, n); }       \
  extern "C" void ml_k_axpy_f32_##set(float *y, float a, const float *x, int n) { ml::f4::axpy(y, a, x, n); }        \
  extern "C" void ml_k_dot_f32_cols_##set(float *s, const float *q, const float *k, size_t ld, int cols, int n,  \
                                          float den) {                                                              \
    ml::f4::dot_cols(s, q, k, ld, cols, n, den);                                                                    \
  }                                                                                                                 \
  extern "C" void ml_k_axpy_f32_rows_##set(float *y, const float *a, const float *x, size_t ld, int rows, int n) { \
    ml::f4::axpy_rows(y, a, x, ld, rows, n);                                                                        \
  }

#define ML_F4_ADD(set) \
  extern "C" void ml_k_add_##set(float *y, const float *x, int n) { ml::f4::add(y, x, n); }
