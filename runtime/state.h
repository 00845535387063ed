// Runtime buffers of one context, all views into its arena (shapes in comments).
#pragma once
#include "kernels/kernels.h"
#include "runtime/arena.h"
#include "runtime/model.h"
#include "runtime/sampler.h"

namespace ml {

struct State {
  int max_seq = 0;      // context length of this state (<= the model's)
  float *x;             // (dim)            residual stream
  float *xb;            // (dim)            normed input / attention output
  float *xb2;           // (dim)            projection output
  float *hb, *hb2;      // (hidden_dim)     FFN gate, up
  float *q;             // (dim)            query
  float *att;           // (n_heads, max_seq) attention scores
  float *logits;        // (vocab)
  float *key_cache;     // (n_layers, max_seq, kv_dim)
  float *value_cache;   // (n_layers, max_seq, kv_dim)
  float *rope_cos;      // (max_seq, head_dim/2)
  float *rope_sin;      // (max_seq, head_dim/2)
  ml_qact xq;           // Q8_0 activation, (max(dim, hidden_dim))
  float *probs;         // (vocab)          sampler
  ProbIndex *cand;      // (vocab)          sampler
};

// Reserves every buffer of `s` in `a` (called for the measuring and the assigning pass).
void layout_state(Arena &a, State &s, const Config &c, int max_seq);

// Fills the RoPE tables: cos/sin(pos · θ^(−2i/head_dim)), in llama2.c's float arithmetic.
void fill_rope_tables(State &s, const Config &c);

}  // namespace ml
