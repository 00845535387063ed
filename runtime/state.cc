#include "runtime/state.h"

#include <algorithm>
#include <cmath>

namespace ml {

void layout_state(Arena &a, State &s, const Config &c, int max_seq) {
  const uint64_t S = uint64_t(max_seq), L = uint64_t(c.n_layers), kv = uint64_t(c.kv_dim());
  s.max_seq = max_seq;
  a.reserve(&s.x, c.dim);
  a.reserve(&s.xb, c.dim);
  a.reserve(&s.xb2, c.dim);
  a.reserve(&s.hb, c.hidden_dim);
  a.reserve(&s.hb2, c.hidden_dim);
  a.reserve(&s.q, c.dim);
  a.reserve(&s.att, uint64_t(c.n_heads) * S);
  a.reserve(&s.logits, c.vocab);
  a.reserve(&s.key_cache, L * S * kv);
  a.reserve(&s.value_cache, L * S * kv);
  a.reserve(&s.rope_cos, S * uint64_t(c.head_dim() / 2));
  a.reserve(&s.rope_sin, S * uint64_t(c.head_dim() / 2));
  const int qn = std::max(c.dim, c.hidden_dim);
  a.reserve(&s.xq.q, uint64_t(qn));
  a.reserve(&s.xq.d, uint64_t(qn / ML_QK + 1));
  a.reserve(&s.xq.s, uint64_t(qn / ML_QK + 1));
  s.xq.n = 0;
  a.reserve(&s.probs, c.vocab);
  a.reserve(&s.cand, c.vocab);
}

// llama2.c's float arithmetic (exponent 2i/hd in float, freq = 1/θ^e, angle = pos·freq in float),
// with pow/cos/sin evaluated in double and rounded once: every libm (glibc, musl, Emscripten's)
// then gives the same table, so builds on different platforms compute the same bits.
void fill_rope_tables(State &s, const Config &c) {
  const int hd = c.head_dim(), half = hd / 2;
  for (int i = 0; i < half; ++i) {
    const float e = float(2 * i) / float(hd);
    const float freq = 1.0f / static_cast<float>(std::pow(double(c.rope_theta), double(e)));
    for (int pos = 0; pos < s.max_seq; ++pos) {
      const float val = float(pos) * freq;
      s.rope_cos[size_t(pos) * half + i] = static_cast<float>(std::cos(double(val)));
      s.rope_sin[size_t(pos) * half + i] = static_cast<float>(std::sin(double(val)));
    }
  }
}

}  // namespace ml
