// Attention vector kernels, scalar reference.
//   dot_f32:  Σ a[i]·b[i], left to right (scores q·k)
//   axpy_f32: y[i] += a·x[i]             (output Σ_t p_t · v_t)
#include "kernels/kernels.h"

extern "C" float ml_k_dot_f32_scalar(const float *a, const float *b, int n) {
  float s = 0.0f;
  for (int i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

extern "C" void ml_k_axpy_f32_scalar(float *y, float a, const float *x, int n) {
  for (int i = 0; i < n; ++i) y[i] += a * x[i];
}
