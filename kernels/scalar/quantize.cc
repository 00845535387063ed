// Quantization, scalar reference (docs/mlb-format.md "Quantization rules"; bit-exact twin of
// tools/mlb.py, checked by verify/quant_checks.cc against converter output).
//   A block with amax = max|x| < 2^-100 is a zero block (d = 0, values 0), so id stays finite.
//   quantize_q8 (kernel): x (k floats, k % 32 == 0) → out->q (k int8), out->d (k/32 floats),
//     out->s (k/32 exact block sums of q).
//     d = amax/127; id = 127/amax; q = trunc(x·id + copysign(0.5, x)) clamped to [−127, 127].
//   dequantize_q8 (kernel): y = float(q) · d, per element (the Q8_0 KV cache's V rows, and
//     ml_dequantize_row's row-major Q8_0 rows: the one definition).
//   ml_quantize_row_q4_0: GGUF's rule. m = first element of largest |x| (signed); d = m/−8;
//     id = 1/d; q = min(15, trunc(x·id + 8.5)); byte j = q[j] | q[j+16] << 4.
// Defines: ml_k_quantize_q8_scalar ml_k_dequantize_q8_scalar
// Defines: ml_quantize_row_q8_0 ml_quantize_row_q4_0 ml_block_sums_q8 ml_dequantize_row ml_pack_panel16
#include <cmath>
#include <cstring>

#include "kernels/format/panel.h"
#include "kernels/kernels.h"
#include "kernels/mutants.h"

extern "C" void ml_quantize_row_q8_0(int8_t *q, float *d, const float *x, int k) {
  for (int b = 0; b < k / ML_QK; ++b) {
    const float *xb = x + b * ML_QK;
    float amax = 0.0f;
    for (int j = 0; j < ML_QK; ++j) amax = std::fmax(amax, std::fabs(xb[j]));
    if (!(amax >= ML_QUANT_TINY)) {  // also catches NaN
      d[b] = 0.0f;
      std::memset(q + b * ML_QK, 0, ML_QK);
      continue;
    }
    const float id = 127.0f / amax;
    d[b] = amax / 127.0f;
    for (int j = 0; j < ML_QK; ++j) {
      float v = std::trunc(xb[j] * id + std::copysign(0.5f, xb[j]));
      if (ML_MUTANT("q8_tie")) v = std::floor(xb[j] * id + 0.5f);  // mutant: halves round toward +inf
      q[b * ML_QK + j] = static_cast<int8_t>(std::fmin(std::fmax(v, -127.0f), 127.0f));  // NaN x → −127
    }
  }
}

extern "C" void ml_quantize_row_q4_0(uint8_t *q, float *d, const float *x, int k) {
  for (int b = 0; b < k / ML_QK; ++b) {
    const float *xb = x + b * ML_QK;
    float amax = 0.0f, m = 0.0f;
    for (int j = 0; j < ML_QK; ++j)
      if (std::fabs(xb[j]) > amax) {
        amax = std::fabs(xb[j]);
        m = xb[j];
      }
    uint8_t *qb = q + b * (ML_QK / 2);
    if (!(amax >= ML_QUANT_TINY)) {
      d[b] = 0.0f;
      std::memset(qb, 0x88, ML_QK / 2);
      continue;
    }
    const float db = m / -8.0f;
    const float id = 1.0f / db;
    d[b] = db;
    for (int j = 0; j < ML_QK / 2; ++j) {
      const float lo = std::trunc(xb[j] * id + 8.5f), hi = std::trunc(xb[j + ML_QK / 2] * id + 8.5f);
      const int ql = int(std::fmin(std::fmax(lo, 0.0f), 15.0f)), qh = int(std::fmin(std::fmax(hi, 0.0f), 15.0f));
      qb[j] = static_cast<uint8_t>(ql | (qh << 4));
    }
  }
}

extern "C" void ml_block_sums_q8(int32_t *s, const int8_t *q, int k) {
  for (int b = 0; b < k / ML_QK; ++b) {
    int32_t t = 0;
    for (int j = 0; j < ML_QK; ++j) t += q[b * ML_QK + j];
    s[b] = t;
  }
}

extern "C" void ml_k_dequantize_q8_scalar(float *y, const int8_t *q, const float *d, int n) {
  for (int i = 0; i < n; ++i) y[i] = float(q[i]) * d[i / ML_QK];
}

extern "C" void ml_dequantize_row(float *out, const ml_qtensor *W, int row) {
  const int K = W->cols, nb = K / ML_QK;
  if (ml::panel::paneled(W)) {
    for (int k = 0; k < K; ++k) {
      const size_t di = ml::panel::d_index(nb, row, k / ML_QK);
      // d2: elements 16..31 of a block have their own scale; m: w = d·q + m, one rounding (GGUF's
      // other block types: the value ggml's dequantizer gives, runtime/gguf.h)
      const float d = W->d2 && k % ML_QK >= ML_QK / 2 ? W->d2[di] : ml::panel::scale(W, row, k / ML_QK);
      if (W->type == ML_TYPE_Q8_0) {
        out[k] = float(static_cast<const int8_t *>(W->q)[ml::panel::q8_offset(nb, row, k)]) * d;
      } else {
        bool high;
        const uint8_t byte = static_cast<const uint8_t *>(W->q)[ml::panel::q4_offset(nb, row, k, &high)];
        out[k] = float(int(high ? byte >> 4 : byte & 0x0F) - (W->m ? 0 : 8)) * d;
      }
      if (W->m) out[k] = out[k] + W->m[di];
    }
    return;
  }
  switch (W->type) {
    case ML_TYPE_F32:
      std::memcpy(out, static_cast<const float *>(W->q) + size_t(row) * K, sizeof(float) * K);
      break;
    case ML_TYPE_Q8_0:
      ml_k_dequantize_q8_scalar(out, static_cast<const int8_t *>(W->q) + size_t(row) * K, W->d + size_t(row) * nb, K);
      break;
    case ML_TYPE_Q4_0: {
      const uint8_t *q = static_cast<const uint8_t *>(W->q) + size_t(row) * nb * (ML_QK / 2);
      const float *d = W->d + size_t(row) * nb;
      for (int b = 0; b < nb; ++b)
        for (int j = 0; j < ML_QK / 2; ++j) {
          out[b * ML_QK + j] = float(int(q[b * 16 + j] & 0x0F) - 8) * d[b];
          out[b * ML_QK + j + 16] = float(int(q[b * 16 + j] >> 4) - 8) * d[b];
        }
      break;
    }
  }
}

extern "C" void ml_pack_panel16(void *q_out, float *d_out, const void *q, const float *d, int rows, int cols,
                                int type) {
  const int nb = cols / ML_QK, rp = ml::panel::padded_rows(rows);
  for (int r = 0; r < rp; ++r)
    for (int b = 0; b < nb; ++b) d_out[ml::panel::d_index(nb, r, b)] = r < rows ? d[size_t(r) * nb + b] : 0.0f;
  for (int r = 0; r < rp; ++r)
    for (int k = 0; k < cols; ++k) {
      if (type == ML_TYPE_Q8_0) {
        static_cast<int8_t *>(q_out)[ml::panel::q8_offset(nb, r, k)] =
            r < rows ? static_cast<const int8_t *>(q)[size_t(r) * cols + k] : int8_t(0);
      } else {
        const int b = k / ML_QK, e = k % ML_QK;
        int nib = 8;  // padding rows
        if (r < rows) {
          const uint8_t byte = static_cast<const uint8_t *>(q)[(size_t(r) * nb + b) * (ML_QK / 2) + e % (ML_QK / 2)];
          nib = e < ML_QK / 2 ? byte & 0x0F : byte >> 4;
        }
        bool high;
        uint8_t &dst = static_cast<uint8_t *>(q_out)[ml::panel::q4_offset(nb, r, k, &high)];
        dst = high ? uint8_t((dst & 0x0F) | (nib << 4)) : uint8_t((dst & 0xF0) | nib);
      }
    }
}

extern "C" void ml_k_quantize_q8_scalar(ml_qact *out, const float *x, int k) {
  ml_quantize_row_q8_0(out->q, out->d, x, k);
  ml_block_sums_q8(out->s, out->q, k);
  out->n = k;
}
