// ml_open_sibling (runtime/ml.h): a context with its own KV cache that shares its base's mapped
// model and thread pool, as ml_server's slots use it. Run as the ctest entry server.sibling.
#include <cstring>
#include <vector>

#include "runtime/ml.h"
#include "verify/tests/common.h"

namespace {

// Greedy ids of `steps` positions from `prompt`, one ml_eval per position.
std::vector<int> greedy(ml_ctx *ctx, const std::vector<int> &prompt, int steps, int vocab) {
  std::vector<int> out;
  const float *logits = nullptr;
  int tok = prompt[0];
  for (int pos = 0; pos < steps; ++pos) {
    REQUIRE(ml_eval(ctx, tok, pos, &logits) == ML_OK);
    int best = 0;
    for (int i = 1; i < vocab; ++i)
      if (logits[i] > logits[best]) best = i;
    tok = pos + 1 < int(prompt.size()) ? prompt[size_t(pos) + 1] : best;
    out.push_back(best);
  }
  return out;
}

}  // namespace

TEST_CASE("ml_open_sibling: own KV cache, shared weights and pool, the base's bits", "[sibling]") {
  const std::string path = test::models("random_gqa_q8_0.mlb");
  ml_options o;
  ml_options_init(&o);
  o.n_threads = 2;
  ml_ctx *base = nullptr, *sib = nullptr, *sib2 = nullptr;
  REQUIRE(ml_open(&base, path.c_str(), nullptr, &o) == ML_OK);
  o.n_threads = 3;  // ignored: the family's pool is the base's
  o.max_seq = 24;
  REQUIRE(ml_open_sibling(&sib, base, &o) == ML_OK);
  REQUIRE(ml_open_sibling(&sib2, sib, nullptr) == ML_OK);  // a sibling of a sibling: same family
  ml_model_info ib, is, is2;
  REQUIRE(ml_get_info(base, &ib) == ML_OK);
  REQUIRE(ml_get_info(sib, &is) == ML_OK);
  REQUIRE(ml_get_info(sib2, &is2) == ML_OK);
  CHECK(is.n_threads == ib.n_threads);
  CHECK(is.n_threads == 2);
  CHECK(is.max_seq == 24);
  CHECK(is2.max_seq == ib.max_seq);
  CHECK(is.file_bytes == ib.file_bytes);
  CHECK(is.arena_bytes < ib.arena_bytes);  // a shorter KV cache, no copy of the weights

  const std::vector<int> a = {1, 5, 9, 13, 2, 7}, b = {3, 8, 8, 1};
  const int vocab = ib.vocab, steps = 20;
  const std::vector<int> want_a = greedy(base, a, steps, vocab);
  const std::vector<int> want_b = greedy(base, b, steps, vocab);
  // Interleaved: the sibling runs sequence b while the base runs sequence a, position by position.
  const float *la = nullptr, *lb = nullptr;
  std::vector<int> got_a, got_b;
  int ta = a[0], tb = b[0];
  for (int pos = 0; pos < steps; ++pos) {
    REQUIRE(ml_eval(base, ta, pos, &la) == ML_OK);
    std::vector<float> row_a(la, la + vocab);
    REQUIRE(ml_eval(sib, tb, pos, &lb) == ML_OK);
    int ba = 0, bb = 0;
    for (int i = 1; i < vocab; ++i) {
      if (row_a[size_t(i)] > row_a[size_t(ba)]) ba = i;
      if (lb[i] > lb[bb]) bb = i;
    }
    got_a.push_back(ba);
    got_b.push_back(bb);
    ta = pos + 1 < int(a.size()) ? a[size_t(pos) + 1] : ba;
    tb = pos + 1 < int(b.size()) ? b[size_t(pos) + 1] : bb;
  }
  CHECK(got_a == want_a);
  CHECK(got_b == want_b);
  CHECK(greedy(sib2, a, steps, vocab) == want_a);

  // The sibling has no tokenizer of its own; its context bound holds.
  int n = 0, tok = 0;
  CHECK(ml_encode(sib, "x", 1, &tok, 1, &n) == ML_E_ARG);
  CHECK(ml_eval(sib, 1, 24, &lb) == ML_E_ARG);
  ml_close(sib2);
  ml_close(sib);
  ml_close(base);
}

TEST_CASE("ml_open_sibling: bad arguments", "[sibling]") {
  ml_ctx *out = reinterpret_cast<ml_ctx *>(&out);
  CHECK(ml_open_sibling(&out, nullptr, nullptr) == ML_E_ARG);
  CHECK(out == nullptr);
  CHECK(std::strstr(ml_last_error(), "base is NULL") != nullptr);
  CHECK(ml_open_sibling(nullptr, nullptr, nullptr) == ML_E_ARG);
  const std::string path = test::models("random_gqa_q8_0.mlb");
  ml_ctx *base = nullptr;
  REQUIRE(ml_open(&base, path.c_str(), nullptr, nullptr) == ML_OK);
  ml_options o;
  ml_options_init(&o);
  o.max_seq = -1;
  CHECK(ml_open_sibling(&out, base, &o) == ML_E_ARG);
  o.max_seq = 0;
  o.batch = 5000;
  CHECK(ml_open_sibling(&out, base, &o) == ML_E_ARG);
  ml_close(base);
}
