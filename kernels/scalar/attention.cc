// Attention vector kernels, scalar reference.
//   dot_f32:  sum4(a[i]·b[i]) (kernels/kernels.h)   (scores q·k)
//   axpy_f32: y[i] += a·x[i], product then sum   (output Σ_t p_t · v_t)
#include "kernels/kernels.h"
#include "kernels/scalar/sum4.h"

extern "C" float ml_k_dot_f32_scalar(const float *a, const float *b, int n) {
  ml::Sum4 s;
  for (int i = 0; i < n; ++i) s.add(i, a[i] * b[i]);
  return s.total();
}

extern "C" void ml_k_axpy_f32_scalar(float *y, float a, const float *x, int n) {
  for (int i = 0; i < n; ++i) y[i] += a * x[i];
}
