// Generation sessions (runtime/ml.h ml_session_*, runtime/session.cc) on the random GQA model:
// greedy tokens equal a hand-written ml_eval/argmax loop; the common prefix is reused (and at most
// n - 1 tokens of it); finish reasons stop id, max_tokens, full context; misuse is ML_E_ARG with the
// offending value named. Stop strings and text are covered through ml_run and ml_server (chat.cli,
// server, server.openai).
#include <cmath>
#include <string>
#include <vector>

#include "runtime/ml.h"
#include "verify/tests/common.h"

namespace {

// Greedy continuation of prompt, one ml_eval per position (the reference the session must equal).
std::vector<int> greedy(ml_ctx *ctx, const std::vector<int> &prompt, int n_new, int vocab) {
  const float *logits = nullptr;
  for (size_t p = 0; p < prompt.size(); ++p) REQUIRE(ml_eval(ctx, prompt[p], int(p), &logits) == ML_OK);
  std::vector<int> out;
  for (int pos = int(prompt.size());; ++pos) {
    int best = 0;
    for (int i = 1; i < vocab; ++i)
      if (logits[i] > logits[best]) best = i;
    out.push_back(best);
    if (int(out.size()) == n_new) return out;
    REQUIRE(ml_eval(ctx, best, pos, &logits) == ML_OK);
  }
}

// Generates until a finish; returns the tokens and sets *finish.
std::vector<int> run(ml_session *s, int *finish) {
  std::vector<int> got;
  *finish = ML_FINISH_NONE;
  while (*finish == ML_FINISH_NONE) {
    int tok = -1;
    const char *text = nullptr;
    REQUIRE(ml_session_next(s, &tok, &text, finish) == ML_OK);
    REQUIRE(text != nullptr);
    got.push_back(tok);
  }
  return got;
}

}  // namespace

TEST_CASE("session: greedy tokens, prefix reuse and finish reasons", "[session]") {
  const std::string path = test::models("random_gqa_q8_0.mlb");
  ml_options o;
  ml_options_init(&o);
  o.max_seq = 32;
  o.batch = 4;  // prompts of more than one batch
  ml_ctx *ref = nullptr, *ctx = nullptr;
  REQUIRE(ml_open(&ref, path.c_str(), nullptr, &o) == ML_OK);
  REQUIRE(ml_open(&ctx, path.c_str(), nullptr, &o) == ML_OK);
  ml_model_info info;
  REQUIRE(ml_get_info(ctx, &info) == ML_OK);
  const std::vector<int> a = {1, 5, 9, 13, 2, 7, 11, 4, 3}, b = {1, 5, 9, 13, 2, 8};

  ml_session_options so;
  ml_session_options_init(&so);
  so.max_tokens = 6;
  ml_session *s = nullptr;
  REQUIRE(ml_session_new(ctx, &so, &s) == ML_OK);
  int finish = -1, reused = -1, n = 0;

  // A prompt of 9 tokens in batches of 4, then 6 greedy tokens: max_tokens.
  REQUIRE(ml_session_set_prompt(s, a.data(), int(a.size()), &reused) == ML_OK);
  CHECK(reused == 0);
  CHECK(run(s, &finish) == greedy(ref, a, 6, info.vocab));
  CHECK(finish == ML_FINISH_LENGTH);
  CHECK(ml_session_n_generated(s) == 6);
  CHECK(ml_session_n_past(s) == int(a.size()) + 5);  // the last token is never fed
  ml_session_tokens(s, &n);
  CHECK(n == int(a.size()) + 6);
  int tok;
  const char *text;
  CHECK(ml_session_next(s, &tok, &text, &finish) == ML_E_ARG);  // finished
  CHECK(std::string(ml_last_error()).find("finished") != std::string::npos);

  // b shares 5 tokens with a: they stay in the KV cache; the same prompt again reuses n - 1.
  CHECK(ml_session_common_prefix(s, b.data(), int(b.size())) == 5);
  REQUIRE(ml_session_set_prompt(s, b.data(), int(b.size()), &reused) == ML_OK);
  CHECK(reused == 5);
  CHECK(run(s, &finish) == greedy(ref, b, 6, info.vocab));
  REQUIRE(ml_session_set_prompt(s, b.data(), int(b.size()), &reused) == ML_OK);
  CHECK(reused == int(b.size()) - 1);

  // A stop id: the first greedy token of b ends the generation at once, with no text.
  const int first = greedy(ref, b, 1, info.vocab)[0];
  so.stop_ids = &first;
  so.n_stop_ids = 1;
  REQUIRE(ml_session_set_options(s, &so) == ML_OK);
  REQUIRE(ml_session_set_prompt(s, b.data(), int(b.size()), nullptr) == ML_OK);
  REQUIRE(ml_session_next(s, &tok, &text, &finish) == ML_OK);
  CHECK(tok == first);
  CHECK(finish == ML_FINISH_STOP_ID);
  CHECK(std::string(text).empty());
  CHECK(ml_session_n_generated(s) == 0);

  // No max_tokens: the context (32 positions) ends it; every position is used.
  so.max_tokens = 0;
  so.n_stop_ids = 0;
  REQUIRE(ml_session_set_options(s, &so) == ML_OK);
  REQUIRE(ml_session_set_prompt(s, a.data(), int(a.size()), nullptr) == ML_OK);
  CHECK(run(s, &finish).size() == size_t(32 - a.size() + 1));
  CHECK(finish == ML_FINISH_CONTEXT);
  CHECK(ml_session_n_past(s) == 32);

  // Misuse.
  const int bad[] = {1, info.vocab};
  CHECK(ml_session_set_prompt(s, bad, 2, nullptr) == ML_E_ARG);
  CHECK(std::string(ml_last_error()).find(std::to_string(info.vocab)) != std::string::npos);
  CHECK(ml_session_set_prompt(s, a.data(), 0, nullptr) == ML_E_ARG);
  std::vector<int> long_prompt(33, 1);
  CHECK(ml_session_set_prompt(s, long_prompt.data(), 33, nullptr) == ML_E_ARG);
  so.size = 1;
  CHECK(ml_session_set_options(s, &so) == ML_E_ARG);
  so.size = sizeof so;
  so.top_p = 0.0f;
  CHECK(ml_session_set_options(s, &so) == ML_E_ARG);
  CHECK(std::string(ml_last_error()).find("top-p") != std::string::npos);
  ml_session *fresh = nullptr;
  REQUIRE(ml_session_new(ctx, nullptr, &fresh) == ML_OK);
  CHECK(ml_session_next(fresh, &tok, &text, &finish) == ML_E_ARG);  // no prompt
  CHECK(std::string(ml_last_error()).find("no prompt") != std::string::npos);
  ml_session_free(fresh);
  CHECK(ml_session_new(nullptr, nullptr, &fresh) == ML_E_ARG);
  CHECK(fresh == nullptr);
  ml_session_free(s);
  ml_close(ctx);
  ml_close(ref);
}

TEST_CASE("session: a constraint's mask and state, the chain, logprobs of the logits sampled", "[session]") {
  ml_options o;
  ml_options_init(&o);
  o.max_seq = 32;
  ml_ctx *ctx = nullptr;
  REQUIRE(ml_open(&ctx, test::models("random_gqa_q8_0.mlb").c_str(), nullptr, &o) == ML_OK);
  ml_model_info info;
  REQUIRE(ml_get_info(ctx, &info) == ML_OK);
  // A constraint allowing only tokens 7 then 9, then complete and finished.
  struct Only {
    std::vector<int> seq = {7, 9};
    size_t at = 0;
    std::vector<int> accepted;
  } only;
  ml_constraint c{&only,
                  [](void *u, unsigned char *allowed, int) { allowed[static_cast<Only *>(u)->seq[static_cast<Only *>(u)->at]] = 1; },
                  [](void *u, int t) { auto *o = static_cast<Only *>(u); o->accepted.push_back(t), ++o->at; },
                  [](void *u) { return static_cast<Only *>(u)->at == 2 ? 2 : 0; }};
  ml_sampling chain;
  ml_sampling_default(&chain);
  chain.temperature = 1.0f;
  chain.top_k = 3;
  ml_session_options so;
  ml_session_options_init(&so);
  so.constraint = &c;
  so.sampling = &chain;
  so.logprobs = 1;
  so.top_logprobs = 3;
  ml_session *s = nullptr;
  REQUIRE(ml_session_new(ctx, &so, &s) == ML_OK);
  const int prompt[] = {1, 5, 9};
  REQUIRE(ml_session_set_prompt(s, prompt, 3, nullptr) == ML_OK);
  int finish = ML_FINISH_NONE, tok = -1;
  const char *text = nullptr;
  REQUIRE(ml_session_next(s, &tok, &text, &finish) == ML_OK);
  CHECK(tok == 7);
  CHECK(finish == ML_FINISH_NONE);
  float chosen = 0.0f;
  const ml_logprob *top = nullptr;
  int n_top = 0;
  REQUIRE(ml_session_logprobs(s, &chosen, &top, &n_top) == ML_OK);
  CHECK(n_top == 3);
  CHECK(chosen == 0.0f);  // the only token the mask allowed: log 1
  CHECK(top[0].token == 7);
  CHECK(std::isinf(top[1].logprob));
  REQUIRE(ml_session_next(s, &tok, &text, &finish) == ML_OK);
  CHECK(tok == 9);
  CHECK(finish == ML_FINISH_COMPLETE);
  CHECK(only.accepted == std::vector<int>{7, 9});
  // Without the constraint, top_k = 1 is greedy, and logprobs are log-softmax of the logits.
  chain.top_k = 1;
  so.constraint = nullptr;
  so.max_tokens = 1;
  REQUIRE(ml_session_set_options(s, &so) == ML_OK);
  REQUIRE(ml_session_set_prompt(s, prompt, 3, nullptr) == ML_OK);
  REQUIRE(ml_session_next(s, &tok, &text, &finish) == ML_OK);
  const float *logits = ml_session_logits(s);
  int best = 0;
  double sum = 0.0;
  for (int i = 0; i < info.vocab; ++i) best = logits[i] > logits[best] ? i : best;
  for (int i = 0; i < info.vocab; ++i) sum += std::exp(double(logits[i]) - double(logits[best]));
  CHECK(tok == best);
  REQUIRE(ml_session_logprobs(s, &chosen, &top, &n_top) == ML_OK);
  CHECK(top[0].token == best);
  CHECK(std::fabs(chosen + std::log(sum)) < 1e-5);
  CHECK(top[1].logprob <= top[0].logprob);
  ml_session_free(s);
  ml_close(ctx);
}
