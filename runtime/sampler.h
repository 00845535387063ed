// Token sampling, as llama2.c run.c: greedy (temperature 0, first maximum), multinomial over
// softmax(logits / T), or top-p (nucleus) when 0 < topp < 1; xorshift64* RNG. The softmax is the
// one the forward pass uses (the build's kernel, bit-identical to the scalar one on every ISA, or the
// scalar reference itself), so every build samples identically from identical logits. Buffers come
// from the arena.
//
// The sampler chain (opt-in, ml_sampling): stages in this fixed order, each skipped at its neutral
// value, and with every stage neutral the draw is llama2.c's above, unchanged:
//   1. logit_bias        x[id] += bias (a bias of -inf bans the token)
//   2. penalties         over the last repeat_last_n tokens of the history (-1: all of it), for each
//                        token id seen c > 0 times: repeat_penalty r (x > 0: x / r, else x * r), then
//                        x -= c * frequency_penalty + presence_penalty
//   3. top_k             keep the k largest (ties: the lower id)
//   4. temperature       0: the first maximum of what is left (greedy); else p = softmax(x / T),
//                        computed in double over the tokens left
//   5. min_p             drop p < min_p * max p
//   6. top_p             candidates by descending p (ties: lower id), cut after the first whose
//                        cumulative p exceeds top_p (1 = off)
//   7. draw              coin = the xorshift draw in [0, 1), r = coin * (mass left); the first
//                        candidate (same order) whose cumulative p exceeds r
// Log-probabilities (logprobs) are the log-softmax, at temperature 1, of the logits after stages 1-2:
// the logits the chain's cut-offs saw, before top_k / temperature / min_p / top_p.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/ml.h"

namespace ml {

// A top-p candidate as one sortable word: the probability's bits inverted in the high half, the
// token id in the low half. Probabilities are >= 0 (no NaN), whose bits order as the floats do, so
// ascending keys are descending probability, ties by ascending id — llama2.c's order.
inline uint64_t candidate_key(float prob, int index) {
  uint32_t bits;
  static_assert(sizeof bits == sizeof prob, "float is 32 bits");
  std::memcpy(&bits, &prob, sizeof bits);
  return (uint64_t(~bits) << 32) | uint32_t(index);
}
inline float candidate_prob(uint64_t key) {
  const uint32_t bits = ~uint32_t(key >> 32);
  float prob;
  std::memcpy(&prob, &bits, sizeof prob);
  return prob;
}
inline int candidate_index(uint64_t key) { return int(uint32_t(key)); }

class Sampler {
 public:
  // probs: vocab floats; keys: 2 * vocab words (candidates and a radix-sort buffer); softmax:
  // the kernel of the forward pass (both from the context).
  void init(int vocab, float *probs, uint64_t *keys, void (*softmax)(float *, int)) {
    vocab_ = vocab;
    probs_ = probs;
    keys_ = keys;
    softmax_ = softmax;
  }
  ml_status configure(float temperature, float topp, uint64_t seed);
  int sample(const float *logits);

  // The chain: configure it (validates every field, naming the bad one), then draw with the
  // token history the penalties look at. With every chain stage neutral, sample_chain == sample.
  ml_status configure_chain(const ml_sampling &s);
  bool chain_active() const { return chain_; }
  // force: the chain's path even with every stage neutral (logits holding -inf: a constraint's mask).
  int sample_chain(const float *logits, const int *history, int n_history, bool force = false);
  // After sample_chain (or with the same logits and history): log-probability of `token` and the
  // n_top most likely tokens (descending, ties by lower id) into top[0, n_top).
  ml_status logprobs(const float *logits, const int *history, int n_history, int token, int n_top,
                     ml_logprob *top, float *chosen);

 private:
  float random_f32();
  int sample_mult(float coin) const;
  int sample_topp(float coin);
  int walk_nucleus(const uint64_t *keys, int n, float coin, bool must_cut) const;

  int vocab_ = 0;
  float *probs_ = nullptr;
  uint64_t *keys_ = nullptr;
  void (*softmax_)(float *, int) = nullptr;
  void adjusted_logits(const float *logits, const int *history, int n_history);  // stages 1-2 into x_

  float temperature_ = 0.0f, topp_ = 0.9f;
  uint64_t state_ = 1;
  // the chain (configure_chain)
  bool chain_ = false;
  int top_k_ = 0, repeat_last_n_ = 64;
  float min_p_ = 0.0f, repeat_penalty_ = 1.0f, presence_ = 0.0f, frequency_ = 0.0f;
  std::vector<std::pair<int, float>> bias_;
  std::vector<float> x_, kth_;             // the adjusted logits; top_k's selection
  std::vector<std::pair<int, int>> seen_;  // (id, count) of the penalty window
  std::vector<std::pair<double, int>> cand_;
  std::vector<uint64_t> ckeys_;  // the candidates' radix sort
};

int argmax(const float *x, int n);

}  // namespace ml
