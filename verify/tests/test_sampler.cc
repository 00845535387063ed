// The sampler's own tests (runtime/sampler.h), in what a user relies on: which tokens top-p can
// draw and how often, that a seed reproduces its draws and another seed does not, and that
// temperature 0 is the first maximum. The probabilities are given directly (the softmax bound is
// the identity and the temperature 1), exact binary fractions, so every cumulative sum is exact.
// The bit-level top-p rules against llama2.c's plain sort: test_pinned.cc.
#include <cmath>
#include <map>
#include <vector>

#include "runtime/sampler.h"
#include "verify/tests/common.h"

namespace {

void identity(float *, int) {}

// How often each token is drawn from `probs` at top-p `topp` over seeds 1..n (one draw per seed).
std::map<int, int> draws(const std::vector<float> &probs, float topp, int n) {
  const int v = int(probs.size());
  std::vector<float> buf(probs.size());
  std::vector<uint64_t> keys(2 * probs.size());
  std::map<int, int> count;
  for (int seed = 1; seed <= n; ++seed) {
    ml::Sampler s;
    s.init(v, buf.data(), keys.data(), identity);
    REQUIRE(s.configure(1.0f, topp, uint64_t(seed)) == ML_OK);
    const int tok = s.sample(probs.data());
    REQUIRE(tok >= 0);
    REQUIRE(tok < v);
    ++count[tok];
  }
  return count;
}

}  // namespace

TEST_CASE("sampler: top-p draws from the smallest prefix whose mass exceeds p, in proportion", "[sampler]") {
  // Descending probabilities 1/2, 1/4, 3/16, 1/16 (cumulative 1/2, 3/4, 15/16, 1). The candidates
  // below (1 - p) / (n - 1) are dropped first; at p = 0.6 that is only 1/16.
  const std::vector<float> probs = {0.25f, 0.5f, 0.0625f, 0.1875f};  // ids 1, 0, 3, 2 by probability
  const int n = 3000;
  SECTION("p = 0.6: the mass passes p at the second candidate, so the nucleus is {1, 0}") {
    std::map<int, int> c = draws(probs, 0.6f, n);
    INFO("token 1: " << c[1] << ", token 0: " << c[0] << ", token 3: " << c[3] << ", token 2: " << c[2]);
    CHECK(c[3] == 0);  // 3/16: a candidate, but after the cut
    CHECK(c[2] == 0);
    // Within the nucleus in proportion: 1/2 : 1/4 of 3/4, i.e. 2/3 and 1/3 (5 sigma is ~0.043).
    CHECK(std::abs(double(c[1]) / n - 2.0 / 3.0) < 0.045);
    CHECK(std::abs(double(c[0]) / n - 1.0 / 3.0) < 0.045);
  }
  SECTION("p = 0.75 exactly: the mass equals p after two candidates, so the third is still in") {
    std::map<int, int> c = draws(probs, 0.75f, n);
    INFO("token 1: " << c[1] << ", token 0: " << c[0] << ", token 3: " << c[3] << ", token 2: " << c[2]);
    CHECK(c[2] == 0);
    // 3/16 of 15/16 = 0.2 of the draws.
    CHECK(std::abs(double(c[3]) / n - 0.2) < 0.04);
    CHECK(std::abs(double(c[1]) / n - 8.0 / 15.0) < 0.045);
  }
  SECTION("p = 1: every token, in proportion (multinomial)") {
    std::map<int, int> c = draws(probs, 1.0f, n);
    for (int t = 0; t < 4; ++t) {
      INFO("token " << t << ": " << c[t]);
      CHECK(std::abs(double(c[t]) / n - double(probs[size_t(t)])) < 0.045);
    }
  }
}

TEST_CASE("sampler: a seed reproduces its draws, another seed gives others; seed 0 is seed 1", "[sampler]") {
  const int v = 64;
  std::vector<float> flat(v, 1.0f / v), buf(v);
  std::vector<uint64_t> keys(2 * v);
  auto sequence = [&](uint64_t seed, float topp) {
    ml::Sampler s;
    s.init(v, buf.data(), keys.data(), identity);
    REQUIRE(s.configure(1.0f, topp, seed) == ML_OK);
    std::vector<int> out;
    for (int i = 0; i < 40; ++i) out.push_back(s.sample(flat.data()));
    return out;
  };
  for (float topp : {1.0f, 0.9f}) {
    INFO("top-p " << topp);
    CHECK(sequence(42, topp) == sequence(42, topp));
    CHECK(sequence(42, topp) != sequence(43, topp));
    CHECK(sequence(7, topp) != sequence(1u << 20, topp));
    CHECK(sequence(0, topp) == sequence(1, topp));  // xorshift cannot start at 0
  }
}

TEST_CASE("sampler: temperature 0 is the first maximum, whatever the seed", "[sampler]") {
  const std::vector<float> logits = {0.5f, 3.0f, -1.0f, 3.0f, 2.9f};
  std::vector<float> buf(logits.size());
  std::vector<uint64_t> keys(2 * logits.size());
  for (uint64_t seed : {1u, 2u, 99u}) {
    ml::Sampler s;
    s.init(int(logits.size()), buf.data(), keys.data(), identity);
    REQUIRE(s.configure(0.0f, 0.9f, seed) == ML_OK);
    CHECK(s.sample(logits.data()) == 1);
  }
}
