// Layout 1 (16-row panels, docs/mlb-format.md) as element addresses: the definition the scalar
// reference, the packer and the tests read by. Row r, column k (block b = k/32, e = k%32):
//   Q8 quant:   ((p·nb + b)·8 + e/4)·64 + 4i + e%4          (p = r/16, i = r%16)
//   Q4 nibble:  ((p·nb + b)·4 + (e%16)/4)·64 + 4i + e%4, high nibble when e >= 16
//   scale:      (p·nb + b)·16 + i
#pragma once
#include <cstddef>

#include "kernels/kernels.h"

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
inline int padded_rows(int rows) { return (rows + ML_PANEL_ROWS - 1) / ML_PANEL_ROWS * ML_PANEL_ROWS; }

}  // namespace ml::panel
