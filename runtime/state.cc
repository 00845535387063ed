#include "runtime/state.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "kernels/mutants.h"
#include "runtime/ml.h"

namespace ml {

void layout_state(Arena &a, State &s, const Config &c, int max_seq, int batch, int threads, int kv_type) {
  const uint64_t S = uint64_t(max_seq), L = uint64_t(c.n_layers), kv = uint64_t(c.kv_dim()), B = uint64_t(batch);
  const bool f16 = kv_type == ML_KV_F16, q8 = kv_type == ML_KV_Q8_0;
  const uint64_t hd = uint64_t(c.head_dim()), hdq = q8 ? (hd + ML_QK - 1) / ML_QK * ML_QK : 0;
  const uint64_t KS = (S + kKvBlock - 1) / kKvBlock * kKvBlock;  // the caches' positions per kv head
  s.max_seq = max_seq;
  s.kv_seq = int(KS);
  s.batch = batch;
  s.threads = threads;
  s.kv_type = kv_type;
  s.kv_hdq = int(hdq);
  const uint64_t xb = uint64_t(std::max(c.dim, c.q_dim()));  // normed input (dim) or attention output (q_dim)
  a.reserve(&s.x, B * c.dim);
  a.reserve(&s.xb, B * xb);
  a.reserve(&s.xb2, B * c.dim);
  a.reserve(&s.hb, B * c.hidden_dim);
  a.reserve(&s.hb2, B * c.hidden_dim);
  a.reserve(&s.q, B * uint64_t(c.q_dim()));
  a.reserve(&s.att, uint64_t(threads) * uint64_t(c.kv_mul()) * S);
  a.reserve(&s.kv_row, uint64_t(threads) * kKvBlock * (f16 ? hd : hdq));
  a.reserve(&s.kv_new, 2 * B * kv);
  a.reserve(&s.logits, B * c.vocab);
  a.reserve(&s.key_cache, f16 || q8 ? 0 : L * KS * kv);
  a.reserve(&s.value_cache, f16 || q8 ? 0 : L * KS * kv);
  a.reserve(&s.key_cache16, f16 ? L * KS * kv : 0);
  a.reserve(&s.value_cache16, f16 ? L * KS * kv : 0);
  const uint64_t rows8 = q8 ? L * KS * uint64_t(c.n_kv_heads) : 0, M = uint64_t(c.kv_mul()), T = uint64_t(threads);
  a.reserve(&s.key_cache8, rows8 * hdq);
  a.reserve(&s.key_scale8, rows8 * hdq / ML_QK);
  a.reserve(&s.value_cache8, rows8 * hdq);
  a.reserve(&s.value_scale8, rows8 * hdq / ML_QK);
  a.reserve(&s.att_x, q8 ? T * M : 0);
  a.reserve(&s.att_xq, T * M * hdq);
  a.reserve(&s.att_xd, T * M * hdq / ML_QK);
  a.reserve(&s.att_xs, T * M * hdq / ML_QK);
  a.reserve(&s.att_qf, T * hdq);
  a.reserve(&s.rope_cos, S * uint64_t(c.head_dim() / 2));
  a.reserve(&s.rope_sin, S * uint64_t(c.head_dim() / 2));
  const uint64_t qn = uint64_t(std::max({c.dim, c.hidden_dim, c.q_dim()}));
  a.reserve(&s.xq, B);
  a.reserve(&s.xq_q, B * qn);
  a.reserve(&s.xq_d, B * (qn / ML_QK + 1));
  a.reserve(&s.xq_s, B * (qn / ML_QK + 1));
  a.reserve(&s.probs, c.vocab);
  a.reserve(&s.cand, 2 * uint64_t(c.vocab));
}

void bind_activations(State &s, const Config &c) {
  const size_t qn = size_t(std::max({c.dim, c.hidden_dim, c.q_dim()})), nb = qn / ML_QK + 1;
  for (int t = 0; t < s.batch; ++t)
    s.xq[t] = ml_qact{s.xq_q + size_t(t) * qn, s.xq_d + size_t(t) * nb, s.xq_s + size_t(t) * nb, 0};
  if (s.kv_type == ML_KV_Q8_0) {
    const size_t hdq = size_t(s.kv_hdq), nbq = hdq / ML_QK;
    for (size_t i = 0; i < size_t(s.threads) * size_t(c.kv_mul()); ++i)
      s.att_x[i] = ml_qact{s.att_xq + i * hdq, s.att_xd + i * nbq, s.att_xs + i * nbq, 0};
  }
}

// Llama 3's RoPE frequency scaling (rope_scaling = 1, Hugging Face's `llama3` rope type): with
// wavelength λ = 2π/freq and the original context L, high frequencies (λ < L/high) stay, low ones
// (λ > L/low) are divided by `factor`, and in between s = (L/λ − low)/(high − low) blends them:
// freq·((1 − s)/factor + s). Double arithmetic (no libm call), rounded once to float.
namespace {
float llama3_scaled(float freq, const Config &c) {
  const double pi = 3.14159265358979323846, f = freq, L = c.rope_original_max_seq, factor = c.rope_factor;
  const double low = c.rope_low_freq_factor, high = c.rope_high_freq_factor;
  // A hostile file may hold a tiny factor: keep the double -> float conversion defined.
  auto to_float = [](double v) { return static_cast<float>(std::fmin(v, double(FLT_MAX))); };
  const double wavelen = 2 * pi / f;
  if (wavelen < L / high) return freq;
  if (wavelen > L / low) return to_float(f / factor);
  const double smooth = (L / wavelen - low) / (high - low);
  return to_float((1 - smooth) * f / factor + smooth * f);
}
}  // namespace

// llama2.c's float arithmetic (exponent 2i/hd in float, freq = 1/θ^e, angle = pos·freq in float),
// with pow/cos/sin evaluated in double and rounded once: every libm (glibc, musl, Emscripten's)
// then gives the same table, so builds on different platforms compute the same bits. RoPE scaling
// (version 2 files) changes freq here, once.
void fill_rope_tables(State &s, const Config &c) {
  const int hd = c.head_dim(), half = hd / 2;
  for (int i = 0; i < half; ++i) {
    const float e = float((ML_MUTANT("rope_freq") ? 1 : 2) * i) / float(hd);  // mutant: exponent i/hd
    float freq = 1.0f / static_cast<float>(std::pow(double(c.rope_theta), double(e)));
    if (c.rope_scaling == 1) freq = llama3_scaled(freq, c);
    for (int pos = 0; pos < s.max_seq; ++pos) {
      const float val = float(pos) * freq;
      s.rope_cos[size_t(pos) * half + i] = static_cast<float>(std::cos(double(val)));
      s.rope_sin[size_t(pos) * half + i] = static_cast<float>(std::sin(double(val)));
    }
  }
}

}  // namespace ml
