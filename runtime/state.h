// Runtime buffers of one context, all views into its arena (shapes in comments). The forward pass
// works on up to `batch` tokens at once (prompt prefill); decoding uses row 0. The KV cache holds
// F32 (key_cache/value_cache) or F16 (key_cache16/value_cache16, kernels/scalar/kv_f16.h) elements
// as kv_type says; the other pair is empty.
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
  int kv_type = 0;      // ML_KV_F32 or ML_KV_F16 (runtime/ml.h)
  float *x;             // (batch, dim)          residual stream
  float *xb;            // (batch, dim)          normed input / attention output
  float *xb2;           // (batch, dim)          projection output
  float *hb, *hb2;      // (batch, hidden_dim)   FFN gate, up
  float *q;             // (batch, dim)          queries
  float *att;           // (threads, kv_mul, max_seq) attention scores of one worker's query heads
  float *kv_row;        // (threads, kKvBlock, head_dim) F16 cache: a block of K or V as F32
  float *kv_new;        // (2, batch, kv_dim)    the new K and V rows before they go to the cache
  float *logits;        // (batch, vocab)
  float *key_cache;     // (n_layers, n_kv_heads, kv_seq / kKvBlock, head_dim, kKvBlock)   F32 cache
  float *value_cache;   // (n_layers, n_kv_heads, kv_seq, head_dim)
  uint16_t *key_cache16;    // (n_layers, n_kv_heads, kv_seq / kKvBlock, head_dim, kKvBlock)   F16 cache
  uint16_t *value_cache16;  // (n_layers, n_kv_heads, kv_seq, head_dim)
  float *rope_cos;      // (max_seq, head_dim/2)
  float *rope_sin;      // (max_seq, head_dim/2)
  ml_qact *xq;          // (batch) Q8_0 activations, each of max(dim, hidden_dim) elements:
  int8_t *xq_q;         //   (batch, max(dim, hidden))      their quants
  float *xq_d;          //   (batch, max(dim, hidden)/32)   scales
  int32_t *xq_s;        //   (batch, max(dim, hidden)/32)   block sums
  float *probs;         // (vocab)               sampler
  uint64_t *cand;       // (2 * vocab)           sampler: top-p candidates, radix-sort buffer
};

// Reserves every buffer of `s` in `a` (called for the measuring and the assigning pass).
void layout_state(Arena &a, State &s, const Config &c, int max_seq, int batch, int threads, int kv_type);

// Points xq[t] at its storage (after the assigning pass).
void bind_activations(State &s, const Config &c);

// Fills the RoPE tables: cos/sin(pos · θ^(−2i/head_dim)), in llama2.c's float arithmetic.
void fill_rope_tables(State &s, const Config &c);

}  // namespace ml
