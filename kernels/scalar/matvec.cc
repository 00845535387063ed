// Matrix-vector products, scalar reference. y[r] = W[r,:] · x for r in [r0, r1).
//   matvec_q8:  W Q8_0 (rows, K), x Q8_0 (K): sumi_b = Σ_j qw·qx (exact int32),
//               y[r] = sum4 over blocks of t_b = (float(sumi_b) · dw[r,b]) · dx[b]   (kernels/kernels.h)
//   matvec_q4:  W Q4_0, the same with qw = nibble − 8
//   matvec_f32: W F32, x F32: y[r] = Σ_j w[r,j]·x[j], summed left to right exactly as llama2.c's
//               matmul (the F32 golden test compares text with llama2.c)
// This file is the reference every other implementation is compared with (verify/kernel_checks.cc).
#include "kernels/kernels.h"
#include "kernels/scalar/sum4.h"

namespace {

inline int32_t dot_block_q8(const int8_t *w, const int8_t *x) {
  int32_t s = 0;
  for (int j = 0; j < ML_QK; ++j) s += int32_t(w[j]) * int32_t(x[j]);
  return s;
}

inline int32_t dot_block_q4(const uint8_t *w, const int8_t *x) {
  int32_t s = 0;
  for (int j = 0; j < ML_QK / 2; ++j) {
    s += (int32_t(w[j] & 0x0F) - 8) * int32_t(x[j]);
    s += (int32_t(w[j] >> 4) - 8) * int32_t(x[j + ML_QK / 2]);
  }
  return s;
}

}  // namespace

extern "C" void ml_k_matvec_q8_scalar(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  const int nb = W->cols / ML_QK;
  const int8_t *q = static_cast<const int8_t *>(W->q);
  for (int r = r0; r < r1; ++r) {
    const int8_t *w = q + size_t(r) * W->cols;
    const float *dw = W->d + size_t(r) * nb;
    ml::Sum4 sum;
    for (int b = 0; b < nb; ++b) sum.add(b, float(dot_block_q8(w + b * ML_QK, x->q + b * ML_QK)) * dw[b] * x->d[b]);
    y[r] = sum.total();
  }
}

extern "C" void ml_k_matvec_q4_scalar(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  const int nb = W->cols / ML_QK;
  const uint8_t *q = static_cast<const uint8_t *>(W->q);
  for (int r = r0; r < r1; ++r) {
    const uint8_t *w = q + size_t(r) * nb * (ML_QK / 2);
    const float *dw = W->d + size_t(r) * nb;
    ml::Sum4 sum;
    for (int b = 0; b < nb; ++b)
      sum.add(b, float(dot_block_q4(w + b * (ML_QK / 2), x->q + b * ML_QK)) * dw[b] * x->d[b]);
    y[r] = sum.total();
  }
}

extern "C" void ml_k_matvec_f32_scalar(float *y, const ml_qtensor *W, const float *x, int r0, int r1) {
  const int n = W->cols;
  const float *w = static_cast<const float *>(W->q);
  for (int r = r0; r < r1; ++r) {
    const float *row = w + size_t(r) * n;
    float val = 0.0f;
    for (int j = 0; j < n; ++j) val += row[j] * x[j];
    y[r] = val;
  }
}
