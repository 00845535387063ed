// Runtime buffers of one context, all views into its arena (shapes in comments). The forward pass
// works on up to `batch` tokens at once (prompt prefill); decoding uses row 0. The KV cache holds
// F32 (key_cache/value_cache), F16 (key_cache16/value_cache16, kernels/format/f16.h) or Q8_0
// (key_cache8/value_cache8 and their scales) elements as kv_type says; the others are empty.
#pragma once
#include "kernels/kernels.h"
#include "runtime/arena.h"
#include "runtime/model.h"
#include "runtime/sampler.h"

namespace ml {

// Positions of one kv head that attention converts (F16 cache) and evaluates per kernel call
// (runtime/forward.cc attend; dot_f32_cols / axpy_f32_rows); the K cache is element-major inside
// each block of this many positions.
inline constexpr int kKvBlock = 32;

struct State {
  int max_seq = 0;      // context length of this state (<= the model's)
  int kv_seq = 0;       // max_seq rounded up to kKvBlock: positions per kv head in the caches
  int batch = 1;        // tokens per forward call at most
  int threads = 1;      // attention scratch rows
  int kv_type = 0;      // ML_KV_F32, ML_KV_F16 or ML_KV_Q8_0 (runtime/ml.h)
  int kv_hdq = 0;       // Q8_0 cache: head_dim rounded up to a block (32), the elements of a cached row
  float *x;             // (batch, dim)          residual stream
  float *xb;            // (batch, max(dim, q_dim)) normed input (dim) / attention output (q_dim = n_heads·head_dim)
  float *xb2;           // (batch, dim)          projection output
  float *hb, *hb2;      // (batch, hidden_dim)   FFN gate, up
  float *q;             // (batch, q_dim)        queries
  float *att;           // (threads, kv_mul, max_seq) attention scores of one worker's query heads
  float *kv_row;        // (threads, kKvBlock, head_dim) F16 cache: a block of K or V as F32;
                        // (threads, kKvBlock, kv_hdq) Q8_0 cache: a block of V as F32
  float *kv_new;        // (2, batch, kv_dim)    the new K and V rows before they go to the cache
  float *logits;        // (batch, vocab)
  float *key_cache;     // (n_layers, n_kv_heads, kv_seq / kKvBlock, head_dim, kKvBlock)   F32 cache
  float *value_cache;   // (n_layers, n_kv_heads, kv_seq, head_dim)
  uint16_t *key_cache16;    // (n_layers, n_kv_heads, kv_seq / kKvBlock, head_dim, kKvBlock)   F16 cache
  uint16_t *value_cache16;  // (n_layers, n_kv_heads, kv_seq, head_dim)
  // Q8_0 cache (runtime/forward.cc attend_q8): a kv head's K rows (one per position, kv_hdq
  // elements, zero-padded past head_dim) are a Q8_0 matrix in 16-row panels (layout 1,
  // kernels/format/panel.h); its V rows are row-major Q8_0 blocks.
  int8_t *key_cache8;   // (n_layers, n_kv_heads, kv_seq, kv_hdq) quants in panel order
  float *key_scale8;    // (n_layers, n_kv_heads, kv_seq, kv_hdq/32) block scales in panel order
  int8_t *value_cache8; // (n_layers, n_kv_heads, kv_seq, kv_hdq)
  float *value_scale8;  // (n_layers, n_kv_heads, kv_seq, kv_hdq/32)
  ml_qact *att_x;       // (threads, kv_mul) Q8_0 cache: one worker's query heads q/√hd, quantized:
  int8_t *att_xq;       //   (threads, kv_mul, kv_hdq)
  float *att_xd;        //   (threads, kv_mul, kv_hdq/32)
  int32_t *att_xs;      //   (threads, kv_mul, kv_hdq/32)
  float *att_qf;        // (threads, kv_hdq) one query head's q/√hd, zero-padded, before quantization
  float *rope_cos;      // (max_seq, head_dim/2)
  float *rope_sin;      // (max_seq, head_dim/2)
  ml_qact *xq;          // (batch) Q8_0 activations, each of qn = max(dim, hidden_dim, q_dim) elements:
  int8_t *xq_q;         //   (batch, qn)      their quants
  float *xq_d;          //   (batch, qn/32)   scales
  int32_t *xq_s;        //   (batch, qn/32)   block sums
  float *probs;         // (vocab)               sampler
  uint64_t *cand;       // (2 * vocab)           sampler: top-p candidates, radix-sort buffer
};

// Reserves every buffer of `s` in `a` (called for the measuring and the assigning pass).
void layout_state(Arena &a, State &s, const Config &c, int max_seq, int batch, int threads, int kv_type);

// Points xq[t] (and, with a Q8_0 cache, att_x[i]) at their storage (after the assigning pass).
void bind_activations(State &s, const Config &c);

// Fills the RoPE tables: cos/sin(pos · θ^(−2i/head_dim)), in llama2.c's float arithmetic.
void fill_rope_tables(State &s, const Config &c);

}  // namespace ml
