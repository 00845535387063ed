// The reference pinned to numbers written down here, not to another build: each case states its
// input and the exact (or closed-form) answer, so it fails when the scalar reference itself is wrong
// — the comparisons of ISA kernels against the scalar ones cannot see that, and on the scalar
// preset they compare the reference with itself. Kernel cases run the scalar set and the build's.
// tools/mutants.sh (issue 20) checks that these and the rest of the suite catch deliberate bugs.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/binding.h"
#include "runtime/ml.h"
#include "runtime/model.h"
#include "runtime/sampler.h"
#include "runtime/state.h"
#include "runtime/text/tokenizer.h"
#include "verify/tests/common.h"

namespace {

template <class K>
void softmax_cases(const char *set) {
  INFO("kernel set: " << set);
  // [1000, 1000, 999]: exp(1000) overflows float, so only max subtraction keeps it finite.
  const double e1 = std::exp(-1.0), s = 2.0 + e1;
  std::vector<float> x = {1000.0f, 1000.0f, 999.0f};
  K::softmax(x.data(), 3);
  CHECK(x[0] == Approx(1.0 / s).margin(1e-6));
  CHECK(x[1] == Approx(1.0 / s).margin(1e-6));
  CHECK(x[2] == Approx(e1 / s).margin(1e-6));
  // [-1000, -1000]: exp underflows to 0 without the shift (0/0); with it, 1/2 each.
  std::vector<float> y = {-1000.0f, -1000.0f};
  K::softmax(y.data(), 2);
  CHECK(y[0] == 0.5f);
  CHECK(y[1] == 0.5f);
}

template <class K>
void rmsnorm_cases(const char *set) {
  INFO("kernel set: " << set);
  const int n = 32;
  std::vector<float> w(n, 2.0f), o(n, -1.0f);
  // all-zero row: 0 · 1/sqrt(0 + eps) = 0; without eps 0 · inf = NaN.
  std::vector<float> zero(n, 0.0f);
  K::rmsnorm(o.data(), zero.data(), w.data(), n, 1e-5f);
  for (int i = 0; i < n; ++i) CHECK(o[i] == 0.0f);
  // x_i = 1e-3, eps = 1e-5: mean(x²) = 1e-6 is ten times smaller than eps, o = 2e-3/sqrt(1.1e-5).
  std::vector<float> x(n, 1e-3f);
  K::rmsnorm(o.data(), x.data(), w.data(), n, 1e-5f);
  const double want = 2.0 * 1e-3 / std::sqrt(1e-6 + 1e-5);  // 0.603023
  for (int i = 0; i < n; ++i) CHECK(o[i] == Approx(want).epsilon(1e-5));
}

template <class K>
void silu_cases(const char *set) {
  INFO("kernel set: " << set);
  std::vector<float> g = {-4.0f, -1.5f, 0.0f, 0.5f, 2.0f, 6.0f}, u = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, -0.5f};
  const std::vector<float> g0 = g;
  K::silu_mul(g.data(), u.data(), int(g.size()));
  for (size_t i = 0; i < g.size(); ++i) {
    const double v = g0[i], want = v / (1.0 + std::exp(-v)) * u[i];
    INFO("g = " << v << ", u = " << u[i]);
    CHECK(g[i] == Approx(want).margin(2e-6));
  }
}

template <class K>
void rope_cases(const char *set) {
  INFO("kernel set: " << set);
  // Tables of head_dim 4, theta 10000: angle(pos, i) = pos · 10000^(−2i/4), i.e. pos and pos/100.
  ml::Config c;
  c.dim = 8;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.rope_theta = 10000.0f;
  const int seq = 4, half = 2;
  std::vector<float> cos_t(seq * half), sin_t(seq * half);
  ml::State st{};
  st.max_seq = seq;
  st.rope_cos = cos_t.data();
  st.rope_sin = sin_t.data();
  ml::fill_rope_tables(st, c);
  for (int pos = 0; pos < seq; ++pos)
    for (int i = 0; i < half; ++i) {
      const double angle = pos * std::pow(10000.0, -2.0 * i / 4.0);
      INFO("pos " << pos << ", pair " << i);
      CHECK(cos_t[size_t(pos * half + i)] == Approx(std::cos(angle)).margin(1e-6));
      CHECK(sin_t[size_t(pos * half + i)] == Approx(std::sin(angle)).margin(1e-6));
    }
  // Rotating unit vectors at pos 3: (1, 0) → (cos a, sin a); (0, 1) → (−sin a, cos a).
  const int pos = 3;
  std::vector<float> q = {1, 0, 0, 1, 0, 1, 1, 0}, k = {1, 0, 0, 1};
  K::rope(q.data(), k.data(), cos_t.data() + pos * half, sin_t.data() + pos * half, 4, 2, 1);
  const double a0 = 3.0, a1 = 0.03;
  const std::vector<double> want_q = {std::cos(a0), std::sin(a0), -std::sin(a1), std::cos(a1),
                                      -std::sin(a0), std::cos(a0), std::cos(a1), std::sin(a1)};
  for (size_t i = 0; i < q.size(); ++i) CHECK(q[i] == Approx(want_q[i]).margin(1e-6));
  for (size_t i = 0; i < k.size(); ++i) CHECK(k[i] == Approx(want_q[i]).margin(1e-6));
}

// Q8_0 ties: amax 127 makes id = 127/amax exactly 1, so x = ±(k + 0.5) are exact halves.
void q8_tie_cases() {
  std::vector<float> x(ML_QK, 0.0f);
  const float in[] = {127.0f, 0.5f, -0.5f, 1.5f, -1.5f, 2.5f, -2.5f, 63.5f, -63.5f, 126.5f, -126.5f, -127.0f};
  const int want[] = {127, 1, -1, 2, -2, 3, -3, 64, -64, 127, -127, -127};
  const int m = int(sizeof in / sizeof in[0]);
  for (int i = 0; i < m; ++i) x[size_t(i)] = in[i];
  std::vector<int8_t> q(ML_QK);
  float d = 0.0f;
  ml_quantize_row_q8_0(q.data(), &d, x.data(), ML_QK);
  CHECK(d == 1.0f);
  for (int i = 0; i < m; ++i) {
    INFO("x = " << in[i] << " (round half away from zero)");
    CHECK(int(q[size_t(i)]) == want[i]);
  }
}

// A llama2.c tokenizer.bin written here: max_token_length, then (score, length, bytes) per token.
std::vector<uint8_t> tokenizer_bin(const std::vector<std::pair<std::string, float>> &vocab) {
  std::vector<uint8_t> b;
  auto put = [&b](const void *p, size_t n) { b.insert(b.end(), static_cast<const uint8_t *>(p), static_cast<const uint8_t *>(p) + n); };
  const int32_t mtl = 8;
  put(&mtl, 4);
  for (const auto &t : vocab) {
    const int32_t len = int32_t(t.first.size());
    put(&t.second, 4);
    put(&len, 4);
    put(t.first.data(), t.first.size());
  }
  return b;
}

std::vector<int> encode(ml::Tokenizer &tok, const char *text) {
  std::vector<int> ids(std::strlen(text) + 2);
  int n = 0;
  REQUIRE(tok.encode(text, true, ids.data(), int(ids.size()), &n) == ML_OK);
  ids.resize(size_t(n));
  return ids;
}

// Streams pieces through ml_text_stream_feed and returns everything it printed.
std::string stream(const std::vector<std::string> &pieces) {
  ml_text_stream s{};
  std::string out;
  for (const std::string &p : pieces) {
    std::vector<char> buf(p.size() + 4);
    const size_t n = ml_text_stream_feed(&s, p.c_str(), buf.data());
    out.append(buf.data(), n);
  }
  return out;
}

}  // namespace

TEST_CASE("pinned: softmax of [1000, 1000, 999] is finite and exact; [-1000, -1000] is halves", "[pinned]") {
  softmax_cases<ml::ScalarKernels>("scalar");
  softmax_cases<ml::BuildKernels>("build");
}

TEST_CASE("pinned: rmsnorm adds eps (zero row -> 0; mean(x^2) << eps)", "[pinned]") {
  rmsnorm_cases<ml::ScalarKernels>("scalar");
  rmsnorm_cases<ml::BuildKernels>("build");
}

TEST_CASE("pinned: silu_mul is x * sigmoid(x) * u", "[pinned]") {
  silu_cases<ml::ScalarKernels>("scalar");
  silu_cases<ml::BuildKernels>("build");
}

TEST_CASE("pinned: RoPE tables (theta^(-2i/hd)) and the rotation's sign, head_dim 4", "[pinned]") {
  rope_cases<ml::ScalarKernels>("scalar");
  rope_cases<ml::BuildKernels>("build");
}

TEST_CASE("pinned: Q8_0 rounds exact halves away from zero at amax 127", "[pinned]") { q8_tie_cases(); }

TEST_CASE("pinned: llama2.c BPE merges the best score first, the leftmost of equal scores", "[pinned]") {
  // ids:                 0        1      2       3     4      5      6      7      8
  const auto bin = tokenizer_bin({{"<unk>", 0}, {"<s>", 0}, {"</s>", 0}, {" ", -1}, {"a", -2}, {"aa", 5},
                                  {"b", -3}, {"ab", 1}, {"ba", 2}});
  ml::Tokenizer tok;
  REQUIRE(tok.load(bin.data(), bin.size(), 9, "pinned tokenizer") == ML_OK);
  SECTION("equal scores: 'aaa' merges the left pair (' ', 'aa', 'a')") {
    CHECK(encode(tok, "aaa") == std::vector<int>{1, 3, 5, 4});
  }
  SECTION("equal scores: 'aaaaa' -> ' ', 'aa', 'aa', 'a'") {
    CHECK(encode(tok, "aaaaa") == std::vector<int>{1, 3, 5, 5, 4});
  }
  SECTION("higher score first: 'aba' merges 'ba' (2) before 'ab' (1)") {
    CHECK(encode(tok, "aba") == std::vector<int>{1, 3, 4, 8});
  }
}

TEST_CASE("pinned: top-p keeps the candidate at which the cumulative probability reaches p", "[pinned]") {
  // llama2.c: candidates by descending probability up to and including the first whose cumulative
  // probability exceeds topp. With topp = p0 + p1 exactly (the float sum the sampler computes),
  // the cumulative equals topp after two candidates, so the third is still in the nucleus; with
  // topp one ulp below, it is not.
  const std::vector<float> logits = {2.0f, 1.0f, 0.0f};
  std::vector<float> p = logits;
  ml::ScalarKernels::softmax(p.data(), 3);
  const float p01 = (0.0f + p[0]) + p[1];
  REQUIRE(p01 < 1.0f);
  std::vector<float> probs(3);
  std::vector<uint64_t> cand(6);
  auto count_third = [&](float topp) {
    int third = 0, draws = 0;
    for (uint64_t seed = 1; seed <= 2000; ++seed) {
      ml::Sampler s;
      s.init(3, probs.data(), cand.data(), ml::ScalarKernels::softmax);
      REQUIRE(s.configure(1.0f, topp, seed) == ML_OK);
      const int tok = s.sample(logits.data());
      REQUIRE(tok >= 0);
      REQUIRE(tok < 3);
      third += tok == 2;
      ++draws;
    }
    INFO("topp " << topp << ": token 2 drawn " << third << " times of " << draws << " (p2 = " << p[2] << ")");
    return third;
  };
  SECTION("topp = p0 + p1: the boundary candidate stays (drawn ~p2 of the time)") {
    const int third = count_third(p01);
    CHECK(third > 2000 * p[2] / 2);
  }
  SECTION("topp one ulp below p0 + p1: the nucleus is two candidates") {
    CHECK(count_third(std::nextafter(p01, 0.0f)) == 0);
  }
}

TEST_CASE("pinned: top-p over a large vocabulary draws what sorting every candidate draws", "[pinned]") {
  // The sampler radix-sorts packed (probability, id) keys. Reference here: llama2.c's rule written plainly — every candidate sorted, the nucleus cut where
  // the cumulative probability first exceeds topp, the coin scaled by that cumulative.
  const int n = 151936;  // Qwen2.5's vocabulary
  auto reference = [&](const std::vector<float> &logits, float temp, float topp, uint64_t seed) {
    std::vector<float> p(logits.size());
    for (size_t i = 0; i < p.size(); ++i) p[i] = logits[i] / temp;
    ml::ScalarKernels::softmax(p.data(), n);
    uint64_t st = seed;  // the sampler's xorshift64*, one draw
    st ^= st >> 12;
    st ^= st << 25;
    st ^= st >> 27;
    const float coin = float(uint32_t((st * 0x2545F4914F6CDD1Dull) >> 32) >> 8) / 16777216.0f;
    const float cutoff = (1.0f - topp) / float(n - 1);
    struct ProbIndex {
      float prob;
      int index;
    };
    std::vector<ProbIndex> c;
    for (int i = 0; i < n; ++i)
      if (p[size_t(i)] >= cutoff) c.push_back({p[size_t(i)], i});
    std::sort(c.begin(), c.end(), [](const ProbIndex &a, const ProbIndex &b) {
      return a.prob != b.prob ? a.prob > b.prob : a.index < b.index;
    });
    float cum = 0.0f;
    size_t last = c.size() - 1;
    for (size_t i = 0; i < c.size(); ++i) {
      cum += c[i].prob;
      if (cum > topp) {
        last = i;
        break;
      }
    }
    const float r = coin * cum;
    float cdf = 0.0f;
    for (size_t i = 0; i <= last; ++i) {
      cdf += c[i].prob;
      if (r < cdf) return c[i].index;
    }
    return c[last].index;
  };
  std::vector<float> logits(static_cast<size_t>(n)), probs(static_cast<size_t>(n));
  std::vector<uint64_t> cand(2 * static_cast<size_t>(n));
  uint32_t lcg = 12345;
  auto uniform = [&]() { return float((lcg = lcg * 1664525u + 1013904223u) >> 8) / 16777216.0f; };
  auto check = [&](const char *what, float temp, float topp) {
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      ml::Sampler s;
      s.init(n, probs.data(), cand.data(), ml::ScalarKernels::softmax);
      REQUIRE(s.configure(temp, topp, seed) == ML_OK);
      INFO(what << ", T " << temp << ", top-p " << topp << ", seed " << seed);
      CHECK(s.sample(logits.data()) == reference(logits, temp, topp, seed));
    }
  };
  SECTION("spread: probabilities over many exponents (every radix pass runs)") {
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = 14.0f * uniform() - float(i % 3);
    check("spread", 1.0f, 0.9f);
    check("spread", 2.0f, 0.95f);
  }
  SECTION("flat: every entry a candidate, the nucleus 90 % of them") {
    for (float &x : logits) x = 0.01f * uniform();
    check("flat", 1.0f, 0.9f);
    check("flat", 1.0f, 0.999f);
  }
  SECTION("peaked: a few dozen tokens hold the mass") {
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = (i % 4099 == 0 ? 12.0f : 0.0f) + 3.0f * uniform();
    check("peaked", 1.0f, 0.9f);
    check("peaked", 0.7f, 0.5f);
  }
  SECTION("ties: 200 equal maxima, broken by index (the sort must be stable)") {
    for (float &x : logits) x = 0.0f;
    for (int i = 0; i < 200; ++i) logits[size_t((i * 7919) % n)] = 9.0f;
    check("ties", 1.0f, 0.9f);
    check("ties", 1.0f, 0.2f);
  }
}

TEST_CASE("pinned: the text stream prints a UTF-8 character split across pieces once, whole", "[pinned]") {
  const std::string emoji = "\xF0\x9F\x99\x82", cjk = "\xE6\x97\xA5";  // U+1F642, U+65E5
  SECTION("4-byte character split 1 + 3") { CHECK(stream({"\xF0", "\x9F\x99\x82"}) == emoji); }
  SECTION("4-byte character split 2 + 2") { CHECK(stream({"a\xF0\x9F", "\x99\x82 b"}) == "a" + emoji + " b"); }
  SECTION("4-byte character split 1 + 1 + 1 + 1") { CHECK(stream({"\xF0", "\x9F", "\x99", "\x82"}) == emoji); }
  SECTION("3-byte character split 2 + 1") { CHECK(stream({"x\xE6\x97", "\xA5"}) == "x" + cjk); }
  SECTION("a truncated character is dropped, the ASCII after it kept") { CHECK(stream({"\xF0\x9F", "ok"}) == "ok"); }
}
