// Token sampling, as llama2.c run.c: greedy (temperature 0, first maximum), multinomial over
// softmax(logits / T), or top-p (nucleus) when 0 < topp < 1; xorshift64* RNG. Uses the scalar
// softmax so every ISA build samples identically from identical logits. Buffers come from the arena.
#pragma once
#include <cstdint>

#include "runtime/ml.h"

namespace ml {

struct ProbIndex {
  float prob;
  int index;
};

class Sampler {
 public:
  // probs: vocab floats; candidates: vocab entries (both from the arena).
  void init(int vocab, float *probs, ProbIndex *candidates) {
    vocab_ = vocab;
    probs_ = probs;
    cand_ = candidates;
  }
  ml_status configure(float temperature, float topp, uint64_t seed);
  int sample(const float *logits);

 private:
  float random_f32();
  int sample_mult(float coin) const;
  int sample_topp(float coin);

  int vocab_ = 0;
  float *probs_ = nullptr;
  ProbIndex *cand_ = nullptr;
  float temperature_ = 0.0f, topp_ = 0.9f;
  uint64_t state_ = 1;
};

int argmax(const float *x, int n);

}  // namespace ml
