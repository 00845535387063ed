// Layout 1 (16-row panels, docs/mlb-format.md) as element addresses: the definition the scalar
// reference, the packer and the tests read by. Row r, column k (block b = k/32, e = k%32):
//   Q8 quant:   ((p·nb + b)·8 + e/4)·64 + 4i + e%4          (p = r/16, i = r%16)
//   Q4 nibble:  ((p·nb + b)·4 + (e%16)/4)·64 + 4i + e%4, high nibble when e >= 16
//   scale:      (p·nb + b)·16 + i
// Layout 2 is layout 1 with the scales as binary16 (W->dh, same index), each widened exactly.
#pragma once
#include <cstddef>

#include "kernels/kernels.h"
#include "kernels/format/f16.h"

namespace ml::panel {

inline size_t q8_offset(int nb, int r, int k) {
  const size_t p = size_t(r) / ML_PANEL_ROWS, i = size_t(r) % ML_PANEL_ROWS, b = size_t(k) / ML_QK, e = size_t(k) % ML_QK;
  return ((p * nb + b) * 8 + e / 4) * 64 + 4 * i + e % 4;
}
inline size_t q4_offset(int nb, int r, int k, bool *high) {
  const size_t p = size_t(r) / ML_PANEL_ROWS, i = size_t(r) % ML_PANEL_ROWS, b = size_t(k) / ML_QK, e = size_t(k) % ML_QK;
  *high = e >= 16;
  return ((p * nb + b) * 4 + (e % 16) / 4) * 64 + 4 * i + e % 4;
}
inline size_t d_index(int nb, int r, int b) {
  const size_t p = size_t(r) / ML_PANEL_ROWS, i = size_t(r) % ML_PANEL_ROWS;
  return (p * nb + size_t(b)) * ML_PANEL_ROWS + i;
}
inline bool paneled(const ml_qtensor *W) { return W->layout != ML_LAYOUT_ROWS; }
// The scale of block b of row r, in any layout (the value every kernel multiplies by).
inline float scale(const ml_qtensor *W, int r, int b) {
  const int nb = W->cols / ML_QK;
  if (W->layout == ML_LAYOUT_PANEL16_F16) return ml::f32_from_f16(W->dh[d_index(nb, r, b)]);
  return W->layout == ML_LAYOUT_PANEL16 ? W->d[d_index(nb, r, b)] : W->d[size_t(r) * nb + b];
}
inline int padded_rows(int rows) { return (rows + ML_PANEL_ROWS - 1) / ML_PANEL_ROWS * ML_PANEL_ROWS; }

}  // namespace ml::panel
