// Attention vector kernels, scalar reference.
//   dot_f32:  sum4(a[i]·b[i]) (kernels/kernels.h)   (scores q·k)
//   axpy_f32: y[i] += a·x[i], product then sum   (output Σ_t p_t · v_t)
//   dot_f32_rows / axpy_f32_rows: the same, row after row (their definition: the other sets
//   evaluate rows side by side and must give these bits)
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

extern "C" void ml_k_dot_f32_rows_scalar(float *s, const float *q, const float *k, size_t ldk, int rows, int n) {
  for (int r = 0; r < rows; ++r) s[r] = ml_k_dot_f32_scalar(q, k + size_t(r) * ldk, n);
}

extern "C" void ml_k_axpy_f32_rows_scalar(float *y, const float *a, const float *x, size_t ldx, int rows, int n) {
  for (int r = 0; r < rows; ++r) ml_k_axpy_f32_scalar(y, a[r], x + size_t(r) * ldx, n);
}
