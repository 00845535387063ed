// Attention vector kernels, scalar reference.
//   dot_f32:  sum4(a[i]·b[i]) (kernels/kernels.h)   (scores q·k)
//   axpy_f32: y[i] += a·x[i], product then sum   (output Σ_t p_t · v_t)
//   dot_f32_cols / axpy_f32_rows: the same, position after position, the scores divided by den
//   (their definition: the other sets evaluate positions side by side and must give these bits)
// Defines: ml_k_dot_f32_scalar ml_k_axpy_f32_scalar ml_k_dot_f32_cols_scalar ml_k_axpy_f32_rows_scalar
#include "kernels/format/sum4.h"
#include "kernels/kernels.h"

extern "C" float ml_k_dot_f32_scalar(const float *a, const float *b, int n) {
  ml::Sum4 s;
  for (int i = 0; i < n; ++i) s.add(i, a[i] * b[i]);
  return s.total();
}

extern "C" void ml_k_axpy_f32_scalar(float *y, float a, const float *x, int n) {
  for (int i = 0; i < n; ++i) y[i] += a * x[i];
}

extern "C" void ml_k_dot_f32_cols_scalar(float *s, const float *q, const float *kt, size_t ldk, int cols, int n,
                                         float den) {
  for (int p = 0; p < cols; ++p) {
    ml::Sum4 sum;
    for (int i = 0; i < n; ++i) sum.add(i, q[i] * kt[size_t(i) * ldk + size_t(p)]);
    s[p] = sum.total() / den;
  }
}

extern "C" void ml_k_axpy_f32_rows_scalar(float *y, const float *a, const float *x, size_t ldx, int rows, int n) {
  for (int r = 0; r < rows; ++r) ml_k_axpy_f32_scalar(y, a[r], x + size_t(r) * ldx, n);
}
