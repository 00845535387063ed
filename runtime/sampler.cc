#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>

#include "kernels/kernels.h"
#include "kernels/mutants.h"
#include "runtime/error.h"

extern "C" void ml_k_softmax_scalar(float *x, int n);

namespace ml {

int argmax(const float *x, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return best;
}

ml_status Sampler::configure(float temperature, float topp, uint64_t seed) {
  if (!(temperature >= 0.0f) || !std::isfinite(temperature))
    return fail(ML_E_ARG, "temperature %g must be a finite number >= 0", double(temperature));
  if (!(topp > 0.0f && topp <= 1.0f)) return fail(ML_E_ARG, "top-p %g must be in (0, 1]", double(topp));
  temperature_ = temperature;
  topp_ = topp;
  state_ = seed != 0 ? seed : 1;  // xorshift has a fixed point at 0
  return ML_OK;
}

float Sampler::random_f32() {
  state_ ^= state_ >> 12;
  state_ ^= state_ << 25;
  state_ ^= state_ >> 27;
  const uint32_t r = static_cast<uint32_t>((state_ * 0x2545F4914F6CDD1Dull) >> 32);
  return float(r >> 8) / 16777216.0f;
}

int Sampler::sample_mult(float coin) const {
  float cdf = 0.0f;
  for (int i = 0; i < vocab_; ++i) {
    cdf += probs_[i];
    if (coin < cdf) return i;
  }
  return vocab_ - 1;  // rounding
}

int Sampler::sample_topp(float coin) {
  // Tokens below (1 - topp) / (n - 1) cannot be in the nucleus; drop them before sorting.
  const float cutoff = (1.0f - topp_) / float(vocab_ > 1 ? vocab_ - 1 : 1);
  int n0 = 0;
  for (int i = 0; i < vocab_; ++i)
    if (probs_[i] >= cutoff) cand_[n0++] = {probs_[i], i};
  if (n0 == 0) return argmax(probs_, vocab_);
  std::sort(cand_, cand_ + n0, [](const ProbIndex &a, const ProbIndex &b) {
    return a.prob != b.prob ? a.prob > b.prob : a.index < b.index;
  });
  float cumulative = 0.0f;
  int last = n0 - 1;
  for (int i = 0; i < n0; ++i) {
    cumulative += cand_[i].prob;
    if (cumulative > topp_ || (ML_MUTANT("topp_boundary") && cumulative == topp_)) {  // mutant: >=
      last = i;
      break;
    }
  }
  const float r = coin * cumulative;
  float cdf = 0.0f;
  for (int i = 0; i <= last; ++i) {
    cdf += cand_[i].prob;
    if (r < cdf) return cand_[i].index;
  }
  return cand_[last].index;
}

int Sampler::sample(const float *logits) {
  if (temperature_ == 0.0f) return argmax(logits, vocab_);
  for (int i = 0; i < vocab_; ++i) probs_[i] = logits[i] / temperature_;
  ml_k_softmax_scalar(probs_, vocab_);
  const float coin = random_f32();
  if (topp_ <= 0.0f || topp_ >= 1.0f) return sample_mult(coin);
  return sample_topp(coin);
}

}  // namespace ml
