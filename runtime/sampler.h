// Token sampling, as llama2.c run.c: greedy (temperature 0, first maximum), multinomial over
// softmax(logits / T), or top-p (nucleus) when 0 < topp < 1; xorshift64* RNG. The softmax is the
// one the forward pass uses (the build's kernel, bit-identical to the scalar one on every ISA, or the
// scalar reference itself), so every build samples identically from identical logits. Buffers come
// from the arena.
#pragma once
#include <cstdint>
#include <cstring>

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

 private:
  float random_f32();
  int sample_mult(float coin) const;
  int sample_topp(float coin);
  int walk_nucleus(const uint64_t *keys, int n, float coin, bool must_cut) const;

  int vocab_ = 0;
  float *probs_ = nullptr;
  uint64_t *keys_ = nullptr;
  void (*softmax_)(float *, int) = nullptr;
  float temperature_ = 0.0f, topp_ = 0.9f;
  uint64_t state_ = 1;
};

int argmax(const float *x, int n);

}  // namespace ml
