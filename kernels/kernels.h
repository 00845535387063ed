// The kernel ABI: the tensor types every kernel sees and one function type per kernel.
// Every implementation of kernel K is the C symbol ml_k_<K>_<impl> (impl = scalar, hwy, or an
// override set of simd/isa_table.h) with the type ml_k_<K>_fn, so a hand-written .S file can
// provide one (SysV / AAPCS / AAPCS64). Which one a build calls: kernels/kernel_table.h.
//
// Shared contract (each family's file states its own on top):
//  - matvec kernels compute rows [r0, r1) of y = W·x and write y[r] for exactly those rows, so
//    the caller can split rows across threads; W and x are read, never written. Every quantized
//    kernel accepts every layout; with layouts 1 and 2, r0 is a multiple of 16 and r1 is one or rows.
//  - Quantized arrays (ml_qtensor q/d, ml_qact q/d) start 64-byte aligned in models and the arena,
//    but kernels must not depend on it for correctness: the tests also run them on unaligned
//    buffers. Kernels read only inside their arrays (tests put a guard page right after every
//    buffer). F32 vectors of length n have no alignment promise and any n >= 1.
//  - Integer block sums are exact int32 (|sum| <= 32*127*127) on every ISA.
//  - Bit-identical results: every kernel except matvec_f32 has ONE defined float evaluation order,
//    chosen so SIMD code can follow it, and every implementation computes exactly it (tests
//    compare bits). This matters because activations are quantized between layers: a 1e-7
//    difference that moves one value across a rounding boundary changes a quant by one step and a
//    logit by ~1e-3. The order (kernels/format/sum4.h):
//      sum4(v_0 … v_{n-1}): four partial sums p_j = v_j + v_{j+4} + … (each from +0, in index
//      order), then (p_0 + p_1) + (p_2 + p_3). A missing element counts as +0 (identity).
//      matvec_q8/q4  y_r = sum4 over blocks b of t_b = (float(sumi_b) · dw_b) · dx_b
//                    with d2 (Q8): two terms per block into its partial, (float(lo_b) · dw_b) · dx_b
//                      then (float(hi_b) · d2_b) · dx_b, lo/hi the sums of elements 0..15 / 16..31;
//                    with m: then y_r = y_r + M_r, M_r = sum4 over b of, into partial b mod 4,
//                      Q4: (float(sx_b) · (8 · dw_b)) · dx_b then (float(sx_b) · m_b) · dx_b,
//                      Q8: (float(sx_b) · m_b) · dx_b          (sx_b = Σ x quants, ml_qact.s)
//      dot_f32       sum4(a_i · b_i)        rmsnorm  ss = sum4(x_i · x_i)   softmax  s = sum4(e_i)
//    Products and sums are separate roundings (never a fused multiply-add), exp is the one
//    polynomial of simd/exp.h, divisions and square roots are IEEE.
//  - matvec_f32 (F32 models only; no quantization follows it) sums left to right in the scalar
//    reference, exactly as llama2.c, and SIMD versions may reassociate: |error| <= 1e-5 of sum |w·x|.
//  - All code is built with -ffp-contract=off; a kernel uses FMA only through explicit intrinsics,
//    and only in matvec_f32.
#pragma once
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { ML_QK = 32 };  // elements per quantization block
#define ML_QUANT_TINY 0x1p-100f  // blocks with max|x| below this quantize to zero (docs/mlb-format.md)

typedef enum ml_type { ML_TYPE_F32 = 0, ML_TYPE_Q4_0 = 2, ML_TYPE_Q8_0 = 8 } ml_type;

typedef enum ml_layout {
  ML_LAYOUT_ROWS = 0,         // row-major blocks
  ML_LAYOUT_PANEL16 = 1,      // 16-row panels: 64-byte units of 4 weights × 16 rows (docs/mlb-format.md)
  ML_LAYOUT_PANEL16_F16 = 2   // layout 1 with binary16 block scales (dh instead of d): 5.6 % (Q8_0) and
                              // 10 % (Q4_0) fewer bytes; each half widened exactly, then layout 1's bits
} ml_layout;
enum { ML_PANEL_ROWS = 16 };

typedef struct ml_qtensor {
  const void *q;    // F32: rows*cols floats; Q8_0: rows*cols int8; Q4_0: rows*cols/2 bytes
                    // (layout 1: rows rounded up to a multiple of 16)
  const float *d;   // block scales, rows*(cols/32); NULL for F32 and for layout 2
  int rows, cols;   // cols is the K dimension
  uint8_t type;     // ml_type
  uint8_t layout;   // ml_layout (docs/mlb-format.md); F32 tensors are always layout 0
  const uint16_t *dh;  // layout 2: the block scales as IEEE binary16 (in d's order); NULL otherwise
  // Layout 1 only, both NULL but for GGUF's other block types taken exactly (runtime/gguf.h):
  const float *m;   // per-block offsets, in d's order: w = d·q + m (Q8: q the int8; Q4: q the
                    // unsigned nibble 0..15, not nibble − 8: Q4_1, Q4_K; Q8: Q5_1, Q5_K)
  const float *d2;  // Q8: the scales of each block's elements 16..31, in d's order (d then scales
                    // elements 0..15: Q6_K, Q3_K's 16-element sub-blocks)
} ml_qtensor;

typedef struct ml_qact {  // a Q8_0-quantized activation vector of n elements (n % 32 == 0)
  int8_t *q;   // n quants
  float *d;    // n/32 scales
  int32_t *s;  // n/32 exact block sums Σ q (quantize_q8 fills them; VNNI-style kernels use them to
               // undo an unsigned offset: Σ (w + 128)·x − 128·Σ x = Σ w·x)
  int n;
} ml_qact;

typedef void ml_k_matvec_q8_fn(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1);
typedef void ml_k_matvec_q4_fn(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1);
typedef void ml_k_matvec_f32_fn(float *y, const ml_qtensor *W, const float *x, int r0, int r1);
// matmul (batched prompt prefill): Y[t·ldy + r] = W[r,:] · X[t] for tokens t < m and rows
// [r0, r1); each value is the bits matvec(W, X[t]) gives. Implementations load a block of weights
// once for several tokens.
typedef void ml_k_matmul_q8_fn(float *Y, size_t ldy, const ml_qtensor *W, const ml_qact *X, int m, int r0, int r1);
typedef void ml_k_matmul_q4_fn(float *Y, size_t ldy, const ml_qtensor *W, const ml_qact *X, int m, int r0, int r1);
typedef void ml_k_quantize_q8_fn(ml_qact *out, const float *x, int k);
// dequantize_q8: y[i] = float(q[i]) · d[i/32] for i < n (n % 32 == 0): one exact conversion and one
// rounded product per element, so every implementation gives the same bits (the Q8_0 KV cache's V
// rows, ml_options.kv_type = ML_KV_Q8_0).
typedef void ml_k_dequantize_q8_fn(float *y, const int8_t *q, const float *d, int n);
typedef void ml_k_rmsnorm_fn(float *o, const float *x, const float *w, int n, float eps);
typedef void ml_k_softmax_fn(float *x, int n);
typedef void ml_k_rope_fn(float *q, float *k, const float *cos_t, const float *sin_t,
                          int head_dim, int n_heads, int n_kv_heads);
typedef void ml_k_silu_mul_fn(float *g, const float *u, int n);
typedef void ml_k_add_fn(float *y, const float *x, int n);
typedef float ml_k_dot_f32_fn(const float *a, const float *b, int n);
typedef void ml_k_axpy_f32_fn(float *y, float a, const float *x, int n);
// The attention's two loops over positions, a block of positions per call. Each is exactly the
// bits of the one-position kernel applied to every position:
//   dot_f32_cols   s[p] = dot_f32(q, k_p, n) / den (one IEEE division: the scores' 1/√hd) for
//                  p < cols, where k_p, the column p of kt, is (kt[p], kt[ldk + p], …,
//                  kt[(n − 1)·ldk + p]): the keys stored element-major, so a SIMD register holds
//                  one element of consecutive positions and each position's sum4 is four vector
//                  accumulators combined lane for lane (no horizontal sums); positions side by
//                  side, so their dependent add chains overlap
//   axpy_f32_rows  for r = 0, 1, …, rows − 1 in order: y[i] += a[r] · x[r·ldx + i] (product, then
//                  sum), with y kept in registers across the rows
typedef void ml_k_dot_f32_cols_fn(float *s, const float *q, const float *kt, size_t ldk, int cols, int n, float den);
typedef void ml_k_axpy_f32_rows_fn(float *y, const float *a, const float *x, size_t ldx, int rows, int n);
typedef void ml_k_exp_f32_fn(float *y, const float *x, int n);  // y = exp(x); the SIMD exp, testable

// Reference quantizers for whole rows (used by the runtime for weights-at-load checks, by the
// tests, and as the bit-exact twin of tools/mlb.py). q/d sized as in ml_qtensor.
void ml_quantize_row_q8_0(int8_t *q, float *d, const float *x, int k);
void ml_block_sums_q8(int32_t *s, const int8_t *q, int k);  // s[b] = Σ q[32b .. 32b+31]
void ml_quantize_row_q4_0(uint8_t *q, float *d, const float *x, int k);
void ml_dequantize_row(float *out, const ml_qtensor *W, int row);  // any layout

// Layout 1 packing (docs/mlb-format.md): row-major q/d of `rows` rows → panels (padding rows
// zero). q_out: ceil(rows/16)·16·cols (Q8) or ·cols/2 (Q4) bytes; d_out: ceil(rows/16)·16·cols/32.
void ml_pack_panel16(void *q_out, float *d_out, const void *q, const float *d, int rows, int cols, int type);

#ifdef __cplusplus
}
#endif
