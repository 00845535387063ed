// The sampler's own tests (runtime/sampler.h), in what a user relies on: which tokens top-p can
// draw and how often, that a seed reproduces its draws and another seed does not, and that
// temperature 0 is the first maximum. The probabilities are given directly (the softmax bound is
// the identity and the temperature 1), exact binary fractions, so every cumulative sum is exact.
// The bit-level top-p rules against llama2.c's plain sort: test_pinned.cc.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
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

// ---- The chain (runtime/sampler.h's stages) against its NumPy statement, verify/sampler_chain_ref.py,
// whose expected draws and log-probabilities are verify/data/sampler_chain_expected.txt (ctest
// sampler.chain_reference proves the file is what the statement gives today).
namespace {

struct ChainCase {
  std::string name;
  ml_sampling cfg{};
  std::vector<int> bias_ids;
  std::vector<float> bias;
  std::vector<std::pair<uint64_t, std::vector<int>>> draws;
  std::vector<std::pair<int, float>> top;
  std::pair<int, float> chosen;
};

std::vector<float> floats_after(std::istringstream &in) {
  std::vector<float> v;
  std::string w;
  while (in >> w) v.push_back(std::strtof(w.c_str(), nullptr));
  return v;
}

std::pair<int, float> id_value(const std::string &w) {
  const size_t c = w.find(':');
  return {std::atoi(w.substr(0, c).c_str()), std::strtof(w.c_str() + c + 1, nullptr)};
}

void read_chain_cases(std::vector<float> *logits, std::vector<int> *history, std::vector<ChainCase> *cases) {
  std::istringstream file(test::read_file(test::env_path("ML_SOURCE", "verify/data/sampler_chain_expected.txt")));
  std::string line;
  while (std::getline(file, line)) {
    std::istringstream in(line);
    std::string tag, w;
    in >> tag;
    if (tag == "logits") *logits = floats_after(in);
    if (tag == "history")
      while (in >> w) history->push_back(std::atoi(w.c_str()));
    if (tag == "case") {
      ChainCase c;
      ml_sampling_default(&c.cfg);
      in >> c.name;
      std::string key, val;
      while (in >> key >> val) {
        const float f = std::strtof(val.c_str(), nullptr);
        if (key == "temp") c.cfg.temperature = f;
        if (key == "top_p") c.cfg.top_p = f;
        if (key == "top_k") c.cfg.top_k = std::atoi(val.c_str());
        if (key == "min_p") c.cfg.min_p = f;
        if (key == "rep") c.cfg.repeat_penalty = f;
        if (key == "last_n") c.cfg.repeat_last_n = std::atoi(val.c_str());
        if (key == "presence") c.cfg.presence_penalty = f;
        if (key == "frequency") c.cfg.frequency_penalty = f;
        if (key == "bias" && val != "-")
          do {
            const auto b = id_value(val);
            c.bias_ids.push_back(b.first);
            c.bias.push_back(b.second);
          } while (in >> val);
      }
      cases->push_back(c);
    }
    if (tag == "draws") {
      uint64_t seed;
      in >> seed;
      std::vector<int> d;
      while (in >> w) d.push_back(std::atoi(w.c_str()));
      cases->back().draws.emplace_back(seed, d);
    }
    if (tag == "top")
      while (in >> w) cases->back().top.push_back(id_value(w));
    if (tag == "chosen" && in >> w) cases->back().chosen = id_value(w);
  }
}

}  // namespace

TEST_CASE("sampler chain: every stage draws as its NumPy statement, seed for seed", "[sampler]") {
  std::vector<float> logits;
  std::vector<int> history;
  std::vector<ChainCase> cases;
  read_chain_cases(&logits, &history, &cases);
  REQUIRE(logits.size() == 64);
  REQUIRE(cases.size() >= 9);
  const int v = int(logits.size());
  std::vector<float> buf(logits.size());
  std::vector<uint64_t> keys(2 * logits.size());
  for (ChainCase &c : cases) {
    INFO("case " << c.name);
    c.cfg.n_logit_bias = int(c.bias.size());
    c.cfg.logit_bias_ids = c.bias_ids.data();
    c.cfg.logit_bias = c.bias.data();
    REQUIRE(c.draws.size() == 3);
    for (const auto &d : c.draws) {
      INFO("seed " << d.first);
      ml::Sampler s;
      s.init(v, buf.data(), keys.data(), identity);
      c.cfg.seed = d.first;
      REQUIRE(s.configure_chain(c.cfg) == ML_OK);
      REQUIRE(s.chain_active());
      std::vector<int> got;
      for (size_t i = 0; i < d.second.size(); ++i)
        got.push_back(s.sample_chain(logits.data(), history.data(), int(history.size())));
      CHECK(got == d.second);
    }
    ml::Sampler s;
    s.init(v, buf.data(), keys.data(), identity);
    REQUIRE(s.configure_chain(c.cfg) == ML_OK);
    std::vector<ml_logprob> top(c.top.size());
    float chosen = 0.0f;
    REQUIRE(s.logprobs(logits.data(), history.data(), int(history.size()), c.chosen.first, int(top.size()),
                       top.data(), &chosen) == ML_OK);
    for (size_t i = 0; i < top.size(); ++i) {
      CHECK(top[i].token == c.top[i].first);
      CHECK(std::fabs(top[i].logprob - c.top[i].second) < 1e-5f);
    }
    CHECK(std::fabs(chosen - c.chosen.second) < 1e-5f);
  }
}

TEST_CASE("sampler chain: neutral stages leave llama2.c's draws; bad fields are named", "[sampler]") {
  const std::vector<float> logits = {0.5f, 3.0f, -1.0f, 3.0f, 2.9f, 0.0f, 1.0f, 2.0f};
  std::vector<float> buf(logits.size()), buf2(logits.size());
  std::vector<uint64_t> keys(2 * logits.size()), keys2(2 * logits.size());
  auto softmax = [](float *x, int n) {
    float mx = x[0], sum = 0.0f;
    for (int i = 1; i < n; ++i) mx = std::max(mx, x[i]);
    for (int i = 0; i < n; ++i) sum += x[i] = std::exp(x[i] - mx);
    for (int i = 0; i < n; ++i) x[i] /= sum;
  };
  ml_sampling cfg;
  ml_sampling_default(&cfg);
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    ml::Sampler a, b;
    a.init(int(logits.size()), buf.data(), keys.data(), softmax);
    b.init(int(logits.size()), buf2.data(), keys2.data(), softmax);
    cfg.seed = seed;
    REQUIRE(a.configure_chain(cfg) == ML_OK);
    REQUIRE_FALSE(a.chain_active());
    REQUIRE(b.configure(cfg.temperature, cfg.top_p, seed) == ML_OK);
    const int history[] = {1, 1, 3};
    for (int i = 0; i < 10; ++i) CHECK(a.sample_chain(logits.data(), history, 3) == b.sample(logits.data()));
  }
  ml::Sampler s;
  s.init(int(logits.size()), buf.data(), keys.data(), softmax);
  const int bad_id = 8;
  const float bias = 1.0f;
  struct Bad {
    void (*set)(ml_sampling *);
    const char *needle;
  } bad[] = {
      {[](ml_sampling *c) { c->top_k = -1; }, "top_k -1"},
      {[](ml_sampling *c) { c->min_p = 1.0f; }, "min_p 1"},
      {[](ml_sampling *c) { c->repeat_penalty = 0.0f; }, "repeat_penalty 0"},
      {[](ml_sampling *c) { c->repeat_last_n = -2; }, "repeat_last_n -2"},
      {[](ml_sampling *c) { c->presence_penalty = NAN; }, "presence_penalty"},
      {[](ml_sampling *c) { c->top_p = 0.0f; }, "top-p 0"},
  };
  for (const Bad &b : bad) {
    ml_sampling c;
    ml_sampling_default(&c);
    b.set(&c);
    CHECK(s.configure_chain(c) == ML_E_ARG);
    CHECK_THAT(ml_last_error(), Catch::Contains(b.needle));
  }
  ml_sampling c;
  ml_sampling_default(&c);
  c.n_logit_bias = 1;
  c.logit_bias_ids = &bad_id;
  c.logit_bias = &bias;
  CHECK(s.configure_chain(c) == ML_E_ARG);
  CHECK_THAT(ml_last_error(), Catch::Contains("token 8 is not in [0, 8)"));
}
