// Matrix-vector products, scalar reference. y[r] = W[r,:] · x for r in [r0, r1).
//   matvec_q8:  W Q8_0 (rows, K), x Q8_0 (K): sumi_b = Σ_j qw·qx (exact int32),
//               y[r] = sum4 over blocks of t_b = (float(sumi_b) · dw[r,b]) · dx[b]   (kernels/kernels.h)
//   matvec_q4:  W Q4_0, the same with qw = nibble − 8
//   matmul_q8/q4: matvec for each of m tokens (Y[t·ldy + r])
//   matvec_f32: W F32, x F32: y[r] = Σ_j w[r,j]·x[j], summed left to right exactly as llama2.c's
//               matmul (the F32 golden test compares text with llama2.c)
// Every weight layout (docs/mlb-format.md): the reference reads every quant and scale through its
// address (kernels/format/panel.h for layouts 1 and 2), so the layouts give the same bits by
// construction (layout 2: for the same scale values, each half widened exactly).
// This file is the reference every other implementation is compared with (verify/kernel_checks.cc).
// Defines: ml_k_matvec_q8_scalar ml_k_matvec_q4_scalar ml_k_matmul_q8_scalar ml_k_matmul_q4_scalar
// Defines: ml_k_matvec_f32_scalar
#include "kernels/format/panel.h"
#include "kernels/format/sum4.h"
#include "kernels/kernels.h"
#include "kernels/mutants.h"

namespace {

// The int8 weights of block b of row r, and its scale, in any layout.
struct QRow {
  const ml_qtensor *W;
  int nb;
  float scale(int r, int b) const { return ml::panel::scale(W, r, b); }
  const int8_t *block_q8(int r, int b, int8_t *buf) const {
    const int8_t *q = static_cast<const int8_t *>(W->q);
    if (!ml::panel::paneled(W)) return q + (size_t(r) * nb + b) * ML_QK;
    for (int j = 0; j < ML_QK; ++j) buf[j] = q[ml::panel::q8_offset(nb, r, b * ML_QK + j)];
    return buf;
  }
  const int8_t *block_q4(int r, int b, int8_t *out) const {  // nibble − 8
    const uint8_t *q = static_cast<const uint8_t *>(W->q);
    for (int j = 0; j < ML_QK; ++j) {
      bool high = j >= ML_QK / 2;
      const uint8_t byte = ml::panel::paneled(W) ? q[ml::panel::q4_offset(nb, r, b * ML_QK + j, &high)]
                                                          : q[(size_t(r) * nb + b) * (ML_QK / 2) + j % (ML_QK / 2)];
      out[j] = int8_t(int(high ? byte >> 4 : byte & 0x0F) - 8);
    }
    return out;
  }
};

template <bool Q4>
void matvec_q(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  const QRow rows{W, W->cols / ML_QK};
  int8_t buf[ML_QK];
  for (int r = r0; r < r1; ++r) {
    ml::Sum4 sum;
    for (int b = 0; b < rows.nb; ++b) {
      const int8_t *w = Q4 ? rows.block_q4(r, b, buf) : rows.block_q8(r, b, buf);
      if (!Q4 && W->d2) {  // two 16-element halves, each with its scale (kernels/kernels.h)
        int32_t lo = 0, hi = 0;
        for (int j = 0; j < ML_QK / 2; ++j) lo += int32_t(w[j]) * int32_t(x->q[b * ML_QK + j]);
        for (int j = ML_QK / 2; j < ML_QK; ++j) hi += int32_t(w[j]) * int32_t(x->q[b * ML_QK + j]);
        sum.add(b, float(lo) * rows.scale(r, b) * x->d[b]);
        const float d2 = ML_MUTANT("kq_half_scale") ? rows.scale(r, b) : W->d2[ml::panel::d_index(rows.nb, r, b)];
        sum.add(b, float(hi) * d2 * x->d[b]);  // mutant: the second half scaled by the first's scale
        continue;
      }
      int32_t sumi = 0;
      for (int j = 0; j < ML_QK; ++j) sumi += int32_t(w[j]) * int32_t(x->q[b * ML_QK + j]);
      sum.add(b, float(sumi) * rows.scale(r, b) * x->d[b]);
    }
    y[r] = sum.total();
    if (W->m) {  // the blocks' offsets: w = d·q + m (Q4: q the unsigned nibble, so 8·d comes back)
      ml::Sum4 off;
      for (int b = 0; b < rows.nb; ++b) {
        const float sx = float(x->s[b]);
        if (Q4 && !ML_MUTANT("kq_offset_eight")) off.add(b, sx * (8.0f * rows.scale(r, b)) * x->d[b]);  // mutant: 8·d dropped
        off.add(b, sx * W->m[ml::panel::d_index(rows.nb, r, b)] * x->d[b]);
      }
      y[r] = y[r] + off.total();
    }
  }
}

}  // namespace

extern "C" void ml_k_matvec_q8_scalar(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  matvec_q<false>(y, W, x, r0, r1);
}

extern "C" void ml_k_matvec_q4_scalar(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  matvec_q<true>(y, W, x, r0, r1);
}

// matmul: matvec per token (the definition the batched kernels must match bit for bit).
extern "C" void ml_k_matmul_q8_scalar(float *Y, size_t ldy, const ml_qtensor *W, const ml_qact *X, int m, int r0, int r1) {
  for (int t = 0; t < m; ++t) matvec_q<false>(Y + size_t(t) * ldy, W, &X[t], r0, r1);
}

extern "C" void ml_k_matmul_q4_scalar(float *Y, size_t ldy, const ml_qtensor *W, const ml_qact *X, int m, int r0, int r1) {
  for (int t = 0; t < m; ++t) matvec_q<true>(Y + size_t(t) * ldy, W, &X[t], r0, r1);
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
