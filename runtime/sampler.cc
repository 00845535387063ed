// The sampler (runtime/sampler.h): argmax, llama2.c's multinomial and top-p draws, and the
// temperature-scaled softmax through the kernel the caller binds (bit-identical to scalar's).
#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <new>

#include "kernels/mutants.h"
#include "runtime/error.h"

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
  state_ = seed != 0 && !ML_MUTANT("sampler_seed") ? seed : 1;  // xorshift has a fixed point at 0 (mutant: seed ignored)
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

namespace {

// Sorts keys[0, n) ascending by their high 32 bits, stably (so equal probabilities keep the
// ascending ids they were collected in): least-significant-digit radix sort, three passes of 11, 11
// and 10 bits, a pass skipped when every key has the same digit. tmp has room for n keys. O(n): a
// flat distribution over 151936 entries costs about a millisecond where a comparison sort cost ten.
void sort_candidates(uint64_t *keys, uint64_t *tmp, int n) {
  static constexpr int kShift[3] = {32, 43, 54}, kBits[3] = {11, 11, 10};
  for (int p = 0; p < 3; ++p) {
    const int shift = kShift[p];
    const uint64_t mask = (uint64_t(1) << kBits[p]) - 1;
    int count[2048] = {0};
    for (int i = 0; i < n; ++i) ++count[(keys[i] >> shift) & mask];
    if (count[(keys[0] >> shift) & mask] == n) continue;
    int start = 0;
    for (int &c : count) {
      const int k = c;
      c = start;
      start += k;
    }
    for (int i = 0; i < n; ++i) tmp[count[(keys[i] >> shift) & mask]++] = keys[i];
    std::memcpy(keys, tmp, size_t(n) * sizeof *keys);
  }
}

// Sorts the chain's candidates (x[id] for ids collected in ascending order) by value descending,
// ties by lower id, through sort_candidates on keys whose high half orders the floats descending
// (-0 taken as +0: they compare equal): the permutation of any sort under that total order (no NaN
// is a candidate), in O(n) — a comparison sort of Qwen's 151936 entries cost ~15 ms a token.
// keys: scratch, grown to 2 * n.
void sort_descending(const float *x, std::vector<std::pair<double, int>> &cand, std::vector<uint64_t> &keys) {
  const size_t n = cand.size();
  keys.resize(2 * n);
  for (size_t i = 0; i < n; ++i) {
    const float v = x[cand[i].second] + 0.0f;  // -0 + 0 = +0
    uint32_t u;
    std::memcpy(&u, &v, sizeof u);
    const uint32_t ascending = u & 0x80000000u ? ~u : u | 0x80000000u;
    keys[i] = (uint64_t(~ascending) << 32) | uint32_t(cand[i].second);
  }
  sort_candidates(keys.data(), keys.data() + n, int(n));
  for (size_t i = 0; i < n; ++i) {
    const int id = int(uint32_t(keys[i]));
    cand[i] = {x[id], id};
  }
}

}  // namespace

// The nucleus walk over keys[0, n) sorted: the cut where the cumulative probability first exceeds
// topp (the last candidate when it never does, or -1 with `must_cut` — the caller sorted only a
// prefix), then the draw within it.
int Sampler::walk_nucleus(const uint64_t *keys, int n, float coin, bool must_cut) const {
  float cumulative = 0.0f;
  int last = -1;
  for (int i = 0; i < n; ++i) {
    const float before = cumulative;
    cumulative += candidate_prob(keys[i]);
    // mutant topp_late: the mass before candidate i tested, so the cut comes one candidate late
    const bool past = ML_MUTANT("topp_late") ? before > topp_ : cumulative > topp_;
    if (past || (ML_MUTANT("topp_boundary") && cumulative == topp_)) {  // mutant: >=
      last = i;
      break;
    }
  }
  if (last < 0) {
    if (must_cut) return -1;
    last = n - 1;
  }
  const float r = coin * cumulative;
  float cdf = 0.0f;
  for (int i = 0; i <= last; ++i) {
    cdf += candidate_prob(keys[i]);
    if (r < cdf) return candidate_index(keys[i]);
  }
  return candidate_index(keys[last]);
}

int Sampler::sample_topp(float coin) {
  // Tokens below (1 - topp) / (n - 1) cannot be in the nucleus; drop them before sorting.
  const float cutoff = (1.0f - topp_) / float(vocab_ > 1 ? vocab_ - 1 : 1);
  // Candidates in id order, and a histogram of their probabilities by the top 12 bits (sign,
  // exponent, 3 mantissa bits: buckets in probability order) with each bucket's mass.
  constexpr int kBuckets = 4096;
  int count[kBuckets] = {0};
  double mass[kBuckets] = {0.0};
  int n0 = 0;
  for (int i = 0; i < vocab_; ++i)
    if (probs_[i] >= cutoff) {
      const uint64_t key = candidate_key(probs_[i], i);
      keys_[n0++] = key;
      const int b = int(~uint32_t(key >> 32) >> 20);
      ++count[b];
      mass[b] += probs_[i];
    }
  if (n0 == 0) return argmax(probs_, vocab_);
  // Only the nucleus needs its order. The highest buckets whose mass passes topp by a margin that
  // covers the float rounding of the cumulative sum (n0 additions, each within 2^-24 relative) are
  // a prefix of the sorted candidates: sort just those and cut there. If the float sum still does
  // not pass topp inside them, sort every candidate. Either way the order and the float sums are
  // exactly those of sorting all n0 candidates, as llama2.c does.
  const double need = double(topp_) + 1e-7 * double(n0) + 1e-6;
  double seen = 0.0;
  int lowest = kBuckets - 1, m = 0;
  while (lowest >= 0) {
    seen += mass[lowest];
    m += count[lowest];
    if (seen > need || m == n0) break;
    --lowest;
  }
  uint64_t *tmp = keys_ + vocab_;
  if (m <= n0 / 2) {  // else sorting them all costs about the same
    int j = 0;
    for (int i = 0; i < n0; ++i)
      if (int(~uint32_t(keys_[i] >> 32) >> 20) >= lowest) tmp[j++] = keys_[i];
    sort_candidates(tmp, keys_, m);  // keys_ is the scratch now: collected again below if needed
    const int tok = walk_nucleus(tmp, m, coin, true);
    if (tok >= 0) return tok;
    n0 = 0;
    for (int i = 0; i < vocab_; ++i)
      if (probs_[i] >= cutoff) keys_[n0++] = candidate_key(probs_[i], i);
  }
  sort_candidates(keys_, tmp, n0);
  return walk_nucleus(keys_, n0, coin, false);
}

int Sampler::sample(const float *logits) {
  if (temperature_ == 0.0f) return argmax(logits, vocab_);
  for (int i = 0; i < vocab_; ++i) probs_[i] = logits[i] / temperature_;
  softmax_(probs_, vocab_);
  const float coin = random_f32();
  if (topp_ <= 0.0f || topp_ >= 1.0f) return sample_mult(coin);
  return sample_topp(coin);
}

// ---- the chain (sampler.h states the stages)

ml_status Sampler::configure_chain(const ml_sampling &s) {
  if (ml_status st = configure(s.temperature, s.top_p, s.seed)) return st;
  if (s.top_k < 0) return fail(ML_E_ARG, "top_k %d must be >= 0", s.top_k);
  if (!(s.min_p >= 0.0f && s.min_p < 1.0f)) return fail(ML_E_ARG, "min_p %g must be in [0, 1)", double(s.min_p));
  if (!(s.repeat_penalty > 0.0f) || !std::isfinite(s.repeat_penalty))
    return fail(ML_E_ARG, "repeat_penalty %g must be a finite number > 0", double(s.repeat_penalty));
  if (s.repeat_last_n < -1) return fail(ML_E_ARG, "repeat_last_n %d must be >= -1", s.repeat_last_n);
  if (!std::isfinite(s.presence_penalty) || !std::isfinite(s.frequency_penalty))
    return fail(ML_E_ARG, "%s must be a finite number", std::isfinite(s.presence_penalty) ? "frequency_penalty" : "presence_penalty");
  if (s.n_logit_bias < 0 || (s.n_logit_bias > 0 && (!s.logit_bias_ids || !s.logit_bias)))
    return fail(ML_E_ARG, "logit_bias: %d entries without their arrays", s.n_logit_bias);
  try {
    bias_.clear();
    for (int i = 0; i < s.n_logit_bias; ++i) {
      const int id = s.logit_bias_ids[i];
      const float b = s.logit_bias[i];
      if (id < 0 || id >= vocab_) return fail(ML_E_ARG, "logit_bias: token %d is not in [0, %d)", id, vocab_);
      if (std::isnan(b) || b == std::numeric_limits<float>::infinity())
        return fail(ML_E_ARG, "logit_bias: token %d's bias %g must be a number (or -inf)", id, double(b));
      bias_.emplace_back(id, b);
    }
    x_.resize(size_t(vocab_));
    kth_.reserve(size_t(vocab_));
    cand_.reserve(size_t(vocab_));
    ckeys_.reserve(2 * size_t(vocab_));
  } catch (const std::bad_alloc &) {
    return fail(ML_E_NOMEM, "sampler chain: out of memory for %d tokens", vocab_);
  }
  top_k_ = s.top_k;
  min_p_ = s.min_p;
  repeat_penalty_ = s.repeat_penalty;
  repeat_last_n_ = s.repeat_last_n;
  presence_ = s.presence_penalty;
  frequency_ = s.frequency_penalty;
  chain_ = top_k_ > 0 || min_p_ > 0.0f || repeat_penalty_ != 1.0f || presence_ != 0.0f || frequency_ != 0.0f ||
           !bias_.empty();
  return ML_OK;
}

void Sampler::adjusted_logits(const float *logits, const int *history, int n_history) {
  std::memcpy(x_.data(), logits, size_t(vocab_) * sizeof(float));
  for (const auto &b : bias_) x_[size_t(b.first)] += b.second;
  if (repeat_penalty_ == 1.0f && presence_ == 0.0f && frequency_ == 0.0f) return;
  const int n = repeat_last_n_ < 0 ? n_history : std::min(n_history, repeat_last_n_);
  seen_.clear();
  for (int i = n_history - n; i < n_history; ++i)
    if (history[i] >= 0 && history[i] < vocab_) seen_.emplace_back(history[i], 1);
  std::sort(seen_.begin(), seen_.end());
  for (size_t i = 0; i < seen_.size();) {
    size_t j = i;
    while (j < seen_.size() && seen_[j].first == seen_[i].first) ++j;
    float &v = x_[size_t(seen_[i].first)];
    if (repeat_penalty_ != 1.0f) v = v > 0.0f ? v / repeat_penalty_ : v * repeat_penalty_;
    v -= float(j - i) * frequency_ + presence_;
    i = j;
  }
}

int Sampler::sample_chain(const float *logits, const int *history, int n_history, bool force) {
  if (!chain_ && !force) return sample(logits);
  adjusted_logits(logits, history, n_history);
  // Stage 3, top_k: the k largest as (logit, id) candidates; the rest never enter. With k set, the
  // k-th largest value is found on the floats alone (a selection over 4-byte values, not pairs),
  // then the candidates above it and, in id order, enough of those equal to it.
  constexpr float kBanned = -std::numeric_limits<float>::infinity();
  cand_.clear();
  float kth = kBanned;
  if (top_k_ > 0 && top_k_ < vocab_) {
    kth_.assign(x_.begin(), x_.end());
    std::nth_element(kth_.begin(), kth_.begin() + (top_k_ - 1), kth_.end(), std::greater<float>());
    kth = kth_[size_t(top_k_ - 1)];
  }
  int ties = top_k_ > 0 ? top_k_ : vocab_;
  for (int i = 0; i < vocab_; ++i) ties -= x_[size_t(i)] > kth;
  for (int i = 0; i < vocab_; ++i) {
    const float v = x_[size_t(i)];
    if (v != kBanned && (v > kth || (v == kth && ties-- > 0))) cand_.emplace_back(v, i);
  }
  if (cand_.empty()) return argmax(logits, vocab_);  // every token banned: the raw choice
  // Stage 4: greedy (the first largest: the head of the order below, without sorting), or
  // p = softmax(x / T) over the candidates sorted descending, ties by lower id.
  if (temperature_ == 0.0f) {
    size_t best = 0;
    for (size_t i = 1; i < cand_.size(); ++i)
      if (cand_[i].first > cand_[best].first) best = i;
    return cand_[best].second;
  }
  sort_descending(x_.data(), cand_, ckeys_);
  const double top = cand_[0].first / double(temperature_);
  double sum = 0.0;
  for (auto &c : cand_) sum += c.first = std::exp(c.first / double(temperature_) - top);
  for (auto &c : cand_) c.first /= sum;  // still descending: exp is monotonic
  // Stage 5, min_p; stage 6, top_p.
  size_t n = cand_.size();
  if (min_p_ > 0.0f) {
    const double floor = double(min_p_) * cand_[0].first;
    while (n > 1 && cand_[n - 1].first < floor) --n;
  }
  double mass = 0.0;
  size_t cut = 0;
  for (; cut < n; ++cut) {
    mass += cand_[cut].first;
    if (topp_ < 1.0f && mass > double(topp_)) {
      ++cut;
      break;
    }
  }
  // Stage 7, the draw.
  const double r = double(random_f32()) * mass;
  double cdf = 0.0;
  for (size_t i = 0; i < cut; ++i) {
    cdf += cand_[i].first;
    if (r < cdf) return cand_[i].second;
  }
  return cand_[cut - 1].second;
}

ml_status Sampler::logprobs(const float *logits, const int *history, int n_history, int token, int n_top,
                            ml_logprob *top, float *chosen) {
  if (token < 0 || token >= vocab_) return fail(ML_E_ARG, "logprobs: token %d is not in [0, %d)", token, vocab_);
  if (n_top < 0 || n_top > vocab_ || (n_top > 0 && !top)) return fail(ML_E_ARG, "logprobs: %d top entries", n_top);
  try {
    x_.resize(size_t(vocab_));
    cand_.reserve(size_t(vocab_));
  } catch (const std::bad_alloc &) {
    return fail(ML_E_NOMEM, "logprobs: out of memory for %d tokens", vocab_);
  }
  adjusted_logits(logits, history, n_history);
  double mx = -std::numeric_limits<double>::infinity();
  for (int i = 0; i < vocab_; ++i) mx = std::max(mx, double(x_[size_t(i)]));
  double sum = 0.0;
  for (int i = 0; i < vocab_; ++i) sum += std::exp(double(x_[size_t(i)]) - mx);
  const double log_z = mx + std::log(sum);
  if (chosen) *chosen = float(double(x_[size_t(token)]) - log_z);
  if (n_top == 0) return ML_OK;
  cand_.clear();
  for (int i = 0; i < vocab_; ++i) cand_.emplace_back(x_[size_t(i)], i);
  auto before = [](const std::pair<double, int> &a, const std::pair<double, int> &b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  std::partial_sort(cand_.begin(), cand_.begin() + n_top, cand_.end(), before);
  for (int i = 0; i < n_top; ++i) top[i] = {cand_[size_t(i)].second, float(cand_[size_t(i)].first - log_z)};
  return ML_OK;
}

}  // namespace ml
