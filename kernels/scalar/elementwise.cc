// Element-wise kernels, scalar reference.
//   silu_mul: g[i] = silu(g[i]) · u[i],  silu(v) = v · (1 / (1 + exp(−v)))   (llama2.c's order)
//   add:      y[i] += x[i]                                              (residual connection)
//   exp_f32:  y[i] = exp(x[i]) with simd/exp.h's polynomial, the exp of softmax and silu on every
//             ISA (a kernel of its own so its bits and its accuracy bound are tested)
// Defines: ml_k_silu_mul_scalar ml_k_add_scalar ml_k_exp_f32_scalar
#include "kernels/kernels.h"
#include "kernels/mutants.h"
#include "simd/exp.h"

extern "C" void ml_k_silu_mul_scalar(float *g, const float *u, int n) {
  for (int i = 0; i < n; ++i) {
    float v = g[i];
    v *= 1.0f / (1.0f + ml::simd::exp_scalar(-v));
    if (ML_MUTANT("silu")) v = 1.0f / (1.0f + ml::simd::exp_scalar(-g[i]));  // mutant: sigmoid only
    g[i] = v * u[i];
  }
}

extern "C" void ml_k_add_scalar(float *y, const float *x, int n) {
  for (int i = 0; i < n; ++i) y[i] += x[i];
}

extern "C" void ml_k_exp_f32_scalar(float *y, const float *x, int n) {
  for (int i = 0; i < n; ++i) y[i] = ml::simd::exp_scalar(x[i]);
}
