// The attention kernels (kernels/kernels.h: dot_f32, axpy_f32, dot_f32_cols, axpy_f32_rows) of an
// override set whose float kernels are the 4-lane layer's bodies (simd/f32x4_math.h), bit-identical to
// kernels/scalar/attention.cc. ML_F4_ATTENTION_KERNELS(sse2) defines ml_k_dot_f32_sse2, ... — the
// ABI's C symbols, so a macro: kernels/x86/sse2/attention.cc and kernels/riscv/rvv/attention.cc.
#pragma once
#include <stddef.h>

#include "kernels/kernels.h"
#include "simd/f32x4_math.h"

#define ML_F4_ATTENTION_KERNELS(set)                                                                                \
  extern "C" float ml_k_dot_f32_##set(const float *a, const float *b, int n) { return ml::f4::dot(a, b, n); }       \
  extern "C" void ml_k_axpy_f32_##set(float *y, float a, const float *x, int n) { ml::f4::axpy(y, a, x, n); }        \
  extern "C" void ml_k_dot_f32_cols_##set(float *s, const float *q, const float *k, size_t ld, int cols, int n,  \
                                          float den) {                                                              \
    ml::f4::dot_cols(s, q, k, ld, cols, n, den);                                                                    \
  }                                                                                                                 \
  extern "C" void ml_k_axpy_f32_rows_##set(float *y, const float *a, const float *x, size_t ld, int rows, int n) { \
    ml::f4::axpy_rows(y, a, x, ld, rows, n);                                                                        \
  }
