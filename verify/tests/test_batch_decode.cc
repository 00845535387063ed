// Slots decoded together (runtime/ml.h ml_eval_family, ml_session_next_batch; ml_server's
// scheduler): four sessions on sibling contexts, with prompts of 1, 6, 19 and 41 tokens (prefilled
// in batches of 8), started at different steps and finishing at different lengths, decoded in one
// batched forward per step; every session's tokens and the bits of every logits row it sampled
// from must equal the same session run alone on a context of its own. Greedy and seeded sampling
// (temperature, top-p, top-k, a repeat penalty), each KV cache type, row-major and panel weights (four combinations).
// Also the misuse cases, each ML_E_ARG. Run as the ctest entry session.batch.
#include <cstring>
#include <string>
#include <vector>

#include "runtime/ml.h"
#include "verify/tests/common.h"

namespace {

struct Gen {
  std::vector<int> tokens;
  std::vector<std::vector<float>> logits;  // what each token was chosen from
};

ml_sampling sampling(int seeded, int slot) {
  ml_sampling sp;
  ml_sampling_default(&sp);
  sp.temperature = seeded ? 0.9f : 0.0f;
  sp.top_p = 0.95f;
  sp.top_k = seeded ? 40 : 0;
  sp.repeat_penalty = seeded ? 1.1f : 1.0f;
  sp.seed = 1000 + uint64_t(slot);
  return sp;
}

std::vector<int> prompt_of(int slot, int vocab) {
  static const int lengths[4] = {1, 6, 19, 41};
  std::vector<int> p;
  for (int i = 0; i < lengths[slot]; ++i) p.push_back((slot * 97 + i * 31 + 1) % vocab);
  return p;
}

void record(Gen &g, const ml_session *s, int token, int vocab) {
  g.tokens.push_back(token);
  const float *l = ml_session_logits(s);
  REQUIRE(l != nullptr);
  g.logits.emplace_back(l, l + vocab);
}

}  // namespace

TEST_CASE("batch decode: four slots in one forward per step = each alone, bit for bit", "[batch_decode]") {
  // Each model greedy and seeded, each KV cache type at least once (not the whole product: under
  // qemu's RVV emulation the 12 combinations took 300 s).
  struct Case {
    const char *model;
    int kv, seeded;
  };
  const Case cases[] = {{"random_gqa_q8_0_panel16.mlb", ML_KV_F32, 0},
                        {"random_gqa_q8_0_panel16.mlb", ML_KV_Q8_0, 1},
                        {"random_gqa_q4_0.mlb", ML_KV_F16, 0},
                        {"random_gqa_q4_0.mlb", ML_KV_F32, 1}};
  const int max_tokens[4] = {23, 9, 17, 12}, start_step[4] = {0, 0, 3, 5};
  int compared = 0, batched_steps = 0;
  for (const Case &c : cases) {
    const char *model = c.model;
    const int kv = c.kv, seeded = c.seeded;
    INFO(model << " kv_type " << kv << (seeded ? " seeded" : " greedy"));
    const std::string path = test::models(model);
    ml_options o;
    ml_options_init(&o);
#if defined(ML_NO_THREADS)
    o.n_threads = 1;  // a build without a thread pool (wasm-scalar, wasm-simd128) refuses more
#else
    o.n_threads = 2;
#endif
    o.max_seq = 64;
    o.batch = 8;
    o.kv_type = kv;
    ml_ctx *solo = nullptr;
    REQUIRE(ml_open(&solo, path.c_str(), nullptr, &o) == ML_OK);
    ml_model_info info;
    REQUIRE(ml_get_info(solo, &info) == ML_OK);
    const int vocab = info.vocab;

    // Each alone.
    Gen want[4];
    for (int k = 0; k < 4; ++k) {
      const ml_sampling sp = sampling(seeded, k);
      ml_session_options so;
      ml_session_options_init(&so);
      so.sampling = &sp;
      so.max_tokens = max_tokens[k];
      ml_session *s = nullptr;
      REQUIRE(ml_session_new(solo, &so, &s) == ML_OK);
      const std::vector<int> p = prompt_of(k, vocab);
      REQUIRE(ml_session_set_prompt(s, p.data(), int(p.size()), nullptr) == ML_OK);
      for (int f = ML_FINISH_NONE; f == ML_FINISH_NONE;) {
        int tok = -1;
        const char *text = nullptr;
        REQUIRE(ml_session_next(s, &tok, &text, &f) == ML_OK);
        record(want[k], s, tok, vocab);
      }
      ml_session_free(s);
    }

    // Together: four slots (a base and three siblings), the scheduler's step: one batched
    // decode of the slots whose prompts are in, then one prefill batch of the first still reading.
    ml_ctx *ctx[4] = {};
    ml_session *ss[4] = {};
    REQUIRE(ml_open(&ctx[0], path.c_str(), nullptr, &o) == ML_OK);
    for (int k = 1; k < 4; ++k) REQUIRE(ml_open_sibling(&ctx[k], ctx[0], &o) == ML_OK);
    ml_sampling sps[4];
    bool started[4] = {}, done[4] = {};
    Gen got[4];
    for (int step = 0; !(done[0] && done[1] && done[2] && done[3]); ++step) {
      REQUIRE(step < 200);
      for (int k = 0; k < 4; ++k)
        if (!started[k] && step >= start_step[k]) {
          sps[k] = sampling(seeded, k);
          ml_session_options so;
          ml_session_options_init(&so);
          so.sampling = &sps[k];
          so.max_tokens = max_tokens[k];
          REQUIRE(ml_session_new(ctx[k], &so, &ss[k]) == ML_OK);
          const std::vector<int> p = prompt_of(k, vocab);
          REQUIRE(ml_session_set_prompt(ss[k], p.data(), int(p.size()), nullptr) == ML_OK);
          started[k] = true;
        }
      std::vector<ml_session *> dec;
      std::vector<int> idx;
      int reading = -1;
      for (int k = 0; k < 4; ++k) {
        if (!started[k] || done[k]) continue;
        int n_hist = 0;
        ml_session_tokens(ss[k], &n_hist);
        const int n_prompt = int(prompt_of(k, vocab).size());
        if (ml_session_n_past(ss[k]) >= n_prompt)
          dec.push_back(ss[k]), idx.push_back(k);
        else if (reading < 0)
          reading = k;
      }
      if (!dec.empty()) {
        std::vector<int> tok(dec.size()), fin(dec.size());
        std::vector<const char *> text(dec.size());
        REQUIRE(ml_session_next_batch(dec.data(), int(dec.size()), tok.data(), text.data(), fin.data()) == ML_OK);
        batched_steps += dec.size() > 1;
        for (size_t i = 0; i < dec.size(); ++i) {
          record(got[idx[i]], dec[i], tok[i], vocab);
          if (fin[i] != ML_FINISH_NONE) done[idx[i]] = true;
        }
      }
      if (reading >= 0) {
        int n = 0;
        REQUIRE(ml_session_prefill(ss[reading], 0, &n, nullptr) == ML_OK);
        REQUIRE(n > 0);
      }
    }
    for (int k = 0; k < 4; ++k) {
      INFO("slot " << k);
      REQUIRE(got[k].tokens == want[k].tokens);
      REQUIRE(int(got[k].tokens.size()) == max_tokens[k]);  // no stop ids: each ends at its length
      for (size_t t = 0; t < got[k].logits.size(); ++t) {
        INFO("token " << t);
        CHECK(std::memcmp(got[k].logits[t].data(), want[k].logits[t].data(), sizeof(float) * size_t(vocab)) == 0);
        ++compared;
      }
    }
    for (int k = 3; k >= 0; --k) ml_session_free(ss[k]);
    for (int k = 3; k >= 1; --k) ml_close(ctx[k]);
    ml_close(ctx[0]);
    ml_close(solo);
  }
  CHECK(compared == 4 * (23 + 9 + 17 + 12));
  CHECK(batched_steps >= 4 * 9);  // steps with 2 or more slots in one forward
}

TEST_CASE("batch decode: misuse is ML_E_ARG, naming what is wrong", "[batch_decode]") {
  const std::string path = test::models("random_gqa_q8_0.mlb");
  ml_options o;
  ml_options_init(&o);
  o.max_seq = 16;
  o.batch = 2;
  ml_ctx *a = nullptr, *b = nullptr, *c = nullptr, *other = nullptr, *f16 = nullptr;
  REQUIRE(ml_open(&a, path.c_str(), nullptr, &o) == ML_OK);
  REQUIRE(ml_open_sibling(&b, a, &o) == ML_OK);
  REQUIRE(ml_open_sibling(&c, a, &o) == ML_OK);
  REQUIRE(ml_open(&other, path.c_str(), nullptr, &o) == ML_OK);
  o.kv_type = ML_KV_F16;
  REQUIRE(ml_open_sibling(&f16, a, &o) == ML_OK);
  const float *l[3] = {};
  const int tok[3] = {1, 2, 3}, pos0[3] = {0, 0, 0};
  {
    ml_ctx *cs[2] = {a, a};
    CHECK(ml_eval_family(cs, tok, pos0, 2, l) == ML_E_ARG);
    CHECK(std::string(ml_last_error()).find("the same") != std::string::npos);
  }
  {
    ml_ctx *cs[2] = {a, other};
    CHECK(ml_eval_family(cs, tok, pos0, 2, l) == ML_E_ARG);
    CHECK(std::string(ml_last_error()).find("family") != std::string::npos);
  }
  {
    ml_ctx *cs[2] = {a, f16};
    CHECK(ml_eval_family(cs, tok, pos0, 2, l) == ML_E_ARG);
    CHECK(std::string(ml_last_error()).find("kv_type") != std::string::npos);
  }
  {
    ml_ctx *cs[3] = {a, b, c};  // more than a's batch of 2
    CHECK(ml_eval_family(cs, tok, pos0, 3, l) == ML_E_ARG);
    CHECK(std::string(ml_last_error()).find("batch") != std::string::npos);
  }
  {
    ml_ctx *cs[2] = {a, b};
    const int skip[2] = {0, 1};  // b has no position yet
    CHECK(ml_eval_family(cs, tok, skip, 2, l) == ML_E_ARG);
    CHECK(std::string(ml_last_error()).find("pos 1 of context 1") != std::string::npos);
    const int bad[2] = {1, 99999};
    CHECK(ml_eval_family(cs, bad, pos0, 2, l) == ML_E_ARG);
    CHECK(std::string(ml_last_error()).find("vocabulary") != std::string::npos);
    CHECK(ml_eval_family(cs, tok, pos0, 2, l) == ML_OK);
  }
  {  // a session still reading its prompt
    ml_session *s = nullptr;
    REQUIRE(ml_session_new(b, nullptr, &s) == ML_OK);
    const int p[3] = {1, 5, 9};
    REQUIRE(ml_session_set_prompt(s, p, 3, nullptr) == ML_OK);
    int t = 0, f = 0;
    const char *text = nullptr;
    CHECK(ml_session_next_batch(&s, 1, &t, &text, &f) == ML_E_ARG);
    CHECK(std::string(ml_last_error()).find("3 prompt tokens to prefill") != std::string::npos);
    ml_session_free(s);
  }
  ml_close(f16);
  ml_close(c);
  ml_close(b);
  ml_close(a);
  ml_close(other);
}
