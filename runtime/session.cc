// Generation sessions (ml_session_* of runtime/ml.h): the one generation loop of ml_run (one-shot,
// --chat), ml_server and the browser demo. Contract: a session owns its context's KV cache and its
// history `tokens`: a prompt, then the sampled tokens; tokens[0..n_past) are in the KV cache, the
// rest are evaluated in batches (ml_eval_batch: the same bits as one by one) by the next prefill or
// next call (ml_session_next_batch: the pending token of several sessions of one family in one
// ml_eval_family, the same bits). A token is chosen from the last logits by choose_token (the context's sampler:
// llama2.c's draws, or the chain of options.sampling over the history; a constraint's mask sets the
// logits of the tokens it forbids to -inf, and the stop ids are allowed only once its text is
// complete; logprobs are taken there too) and fed only when the next one is asked for, so the last token of a
// generation is never evaluated (as run.c). Its text (ml_decode after the previous token) goes
// through ml_text_stream_feed, so what is released is valid UTF-8; text that may still become a
// stop string is held back, a stop string ends the text before it. Finish order for a token: stop
// id, stop string, max_tokens, full context. Errors are an ml_status with the value named; nothing
// aborts or throws (out of memory is ML_E_NOMEM).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "runtime/context.h"
#include "runtime/error.h"
#include "runtime/ml.h"

using namespace ml;

struct ml_session {
  ml_ctx *ctx = nullptr;
  const ml_ctx *text_ctx = nullptr;  // the tokenizer's context: ctx, or its family's base
  int max_tokens = 0;
  std::vector<int> stop_ids, tokens;  // tokens: the history
  std::vector<std::string> stops;     // stop strings, none empty
  int n_past = 0, n_generated = 0;    // tokens[0..n_past) are in the KV cache
  const float *logits = nullptr;      // the last evaluated token's logits
  bool prompted = false, finished = false;
  ml_text_stream stream{};
  std::string held, out;  // held: text not released yet; out: what the last call released
  std::vector<char> piece;
  bool chain = false;                // options.sampling given
  int logprobs = 0, top_logprobs = 0;
  ml_constraint constraint{};        // mask == nullptr: none
  std::vector<float> masked;         // the logits under the constraint's mask
  std::vector<unsigned char> allowed;
  float lp_chosen = 0.0f;
  std::vector<ml_logprob> lp_top;
};

namespace {

// The token-choice step (logits -> token): the constraint's mask, the sampler (chain), logprobs;
// apart so that the logits of several sessions (one batched forward) can each go through it.
int choose_token(ml_session *s, const float *logits) {
  Sampler &sampler = s->ctx->sampler;
  const int vocab = s->ctx->model.cfg.vocab, n_hist = int(s->tokens.size());
  if (s->constraint.mask) {
    s->allowed.assign(size_t(vocab), 0);
    s->constraint.mask(s->constraint.user, s->allowed.data(), vocab);
    const unsigned char complete = s->constraint.state(s->constraint.user) >= 1;
    for (const int id : s->stop_ids)
      if (id >= 0 && id < vocab) s->allowed[size_t(id)] = complete;
    s->masked.assign(logits, logits + vocab);
    for (int i = 0; i < vocab; ++i)
      if (!s->allowed[size_t(i)]) s->masked[size_t(i)] = -HUGE_VALF;
    logits = s->masked.data();
  }
  const int token = s->chain || s->constraint.mask ? sampler.sample_chain(logits, s->tokens.data(), n_hist, true)
                                                   : sampler.sample(logits);
  if (s->logprobs)
    sampler.logprobs(logits, s->tokens.data(), n_hist, token, s->top_logprobs, s->lp_top.data(), &s->lp_chosen);
  return token;
}

// Runs f, turning an allocation failure into ML_E_NOMEM naming `what`.
template <class F>
ml_status guarded(const char *what, F f) {
  try {
    return f();
  } catch (const std::bad_alloc &) {
    return fail(ML_E_NOMEM, "%s: out of memory", what);
  }
}

// Feeds the text of `token` after `prev` through the stream; returns the valid UTF-8 it releases.
const char *stream_text(ml_session *s, int prev, int token) {
  const char *p = ml_decode(s->text_ctx, prev, token);
  if (!p) p = "";  // an id past the tokenizer (padding rows), or a context without a tokenizer
  s->piece.resize(std::strlen(p) + 8);
  s->piece.resize(ml_text_stream_feed(&s->stream, p, s->piece.data()));
  s->piece.push_back('\0');
  return s->piece.data();
}

// Moves held text to out: all of it, or all but its longest tail that begins a stop string.
void release(ml_session *s, bool all) {
  size_t keep = 0;
  for (size_t i = 0; !all && i < s->stops.size(); ++i)
    for (size_t k = std::min(s->stops[i].size() - 1, s->held.size()); k > keep; --k)
      if (s->held.compare(s->held.size() - k, k, s->stops[i], 0, k) == 0) {
        keep = k;
        break;
      }
  s->out.append(s->held, 0, s->held.size() - keep);
  s->held.erase(0, s->held.size() - keep);
}

}  // namespace

extern "C" void ml_session_options_init(ml_session_options *o) {
  std::memset(o, 0, sizeof *o);
  o->size = sizeof *o;
  o->top_p = 0.9f;
  o->seed = 1;
}

extern "C" ml_status ml_session_set_options(ml_session *s, const ml_session_options *o) {
  ml_session_options d;
  ml_session_options_init(&d);
  if (!o) o = &d;
  if (!s || o->size != sizeof *o)
    return fail(ML_E_ARG, "ml_session_set_options: %s", s ? "options.size is not sizeof(ml_session_options)" : "NULL session");
  if (o->max_tokens < 0 || o->n_stop_ids < 0 || o->n_stop_strings < 0 || (o->n_stop_ids && !o->stop_ids) ||
      (o->n_stop_strings && !o->stop_strings))
    return fail(ML_E_ARG, "ml_session_options: max_tokens %d, %d stop ids, %d stop strings: negative or NULL",
                o->max_tokens, o->n_stop_ids, o->n_stop_strings);
  if (o->logprobs < 0 || o->logprobs > 1 || o->top_logprobs < 0 || o->top_logprobs > 20 ||
      (o->constraint && (!o->constraint->mask || !o->constraint->accept || !o->constraint->state)))
    return fail(ML_E_ARG, "ml_session_options: logprobs %d (0 or 1), top_logprobs %d (0 to 20) or a constraint "
                "without its functions", o->logprobs, o->top_logprobs);
  ml_sampling plain;  // without a chain: its neutral stages, which also clear an earlier chain's
  ml_sampling_default(&plain);
  plain.temperature = o->temperature, plain.top_p = o->top_p, plain.seed = o->seed;
  if (const ml_status st = s->ctx->sampler.configure_chain(o->sampling ? *o->sampling : plain)) return st;
  return guarded("ml_session_set_options", [&] {
    s->chain = o->sampling != nullptr;
    s->logprobs = o->logprobs;
    s->top_logprobs = o->logprobs ? o->top_logprobs : 0;
    s->lp_top.resize(size_t(s->top_logprobs));
    s->constraint = o->constraint ? *o->constraint : ml_constraint{};
    s->max_tokens = o->max_tokens;
    s->stop_ids.assign(o->stop_ids, o->stop_ids + o->n_stop_ids);
    s->stops.clear();
    for (int i = 0; i < o->n_stop_strings; ++i)
      if (o->stop_strings[i] && *o->stop_strings[i]) s->stops.emplace_back(o->stop_strings[i]);
    return ML_OK;
  });
}

extern "C" ml_status ml_session_new(ml_ctx *ctx, const ml_session_options *o, ml_session **out) {
  if (out) *out = nullptr;
  if (!out || !ctx) return fail(ML_E_ARG, "ml_session_new: %s is NULL", out ? "the context" : "out");
  *out = new (std::nothrow) ml_session();
  if (!*out) return fail(ML_E_NOMEM, "ml_session_new: out of memory");
  (*out)->ctx = ctx;
  (*out)->text_ctx = ctx->base ? ctx->base : ctx;
  const ml_status st = ml_session_set_options(*out, o);
  if (st) ml_session_free(*out), *out = nullptr;
  return st;
}

extern "C" void ml_session_free(ml_session *s) { delete s; }

extern "C" int ml_session_common_prefix(const ml_session *s, const int *tokens, int n) {
  int l = 0;
  while (s && tokens && l < std::min(n, s->n_past) && s->tokens[size_t(l)] == tokens[l]) ++l;
  return l;
}

extern "C" ml_status ml_session_set_prompt(ml_session *s, const int *tokens, int n, int *n_reused) {
  if (!s || !tokens) return fail(ML_E_ARG, "ml_session_set_prompt: NULL argument");
  const int max_seq = s->ctx->state.max_seq, vocab = s->ctx->model.cfg.vocab;
  if (n < 1 || n > max_seq) return fail(ML_E_ARG, "a prompt of %d tokens: the context takes 1 to %d", n, max_seq);
  for (int i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= vocab)
      return fail(ML_E_ARG, "prompt token %d is id %d, outside the vocabulary [0, %d)", i, tokens[i], vocab);
  const int keep = std::min(ml_session_common_prefix(s, tokens, n), n - 1);
  if (const ml_status st = guarded("ml_session_set_prompt", [&] { return s->tokens.assign(tokens, tokens + n), ML_OK; }))
    return st;
  s->n_past = keep;
  s->n_generated = 0;
  s->logits = nullptr;
  s->prompted = true;
  s->finished = false;
  s->stream = ml_text_stream{};
  s->held.clear();
  if (n_reused) *n_reused = keep;
  return ML_OK;
}

extern "C" ml_status ml_session_prefill(ml_session *s, int all_logits, int *n_evaluated, const float **logits) {
  if (!s || !n_evaluated) return fail(ML_E_ARG, "ml_session_prefill: NULL argument");
  // (the last token of a finished generation is never fed)
  const int n = s->finished ? 0 : std::min(int(s->tokens.size()) - s->n_past, s->ctx->state.batch);
  const float *rows = nullptr;
  if (n > 0) {
    if (const ml_status st = ml_eval_batch(s->ctx, s->tokens.data() + s->n_past, n, s->n_past, all_logits, &rows))
      return st;
    s->n_past += n;
    s->logits = all_logits ? rows + size_t(n - 1) * size_t(s->ctx->model.cfg.vocab) : rows;
    if (logits) *logits = rows;
  }
  *n_evaluated = std::max(n, 0);
  return ML_OK;
}

namespace {

ml_status check_next(const ml_session *s, const char *fn) {
  if (!s->prompted || s->finished)
    return fail(ML_E_ARG, "%s: %s", fn, s->finished ? "the generation has finished; set a new prompt"
                                                    : "no prompt (call ml_session_set_prompt first)");
  return ML_OK;
}

// The choice of ml_session_next once the KV cache holds the whole history (s->logits its last's).
ml_status choose_next(ml_session *s, int *token, const char **text, int *finish) {
  const int prev = s->tokens.back(), next = choose_token(s, s->logits);
  return guarded("ml_session_next", [&] {
    s->out.clear();
    s->tokens.push_back(next);
    int f = ML_FINISH_NONE;
    if (std::find(s->stop_ids.begin(), s->stop_ids.end(), next) != s->stop_ids.end()) {
      f = ML_FINISH_STOP_ID;
    } else {
      if (s->constraint.mask) s->constraint.accept(s->constraint.user, next);
      ++s->n_generated;
      s->held += stream_text(s, prev, next);
      size_t cut = std::string::npos;
      for (const std::string &st : s->stops) cut = std::min(cut, s->held.find(st));
      if (cut != std::string::npos) s->held.resize(cut);
      f = cut != std::string::npos ? ML_FINISH_STOP_STRING
          : s->constraint.mask && s->constraint.state(s->constraint.user) == 2 ? ML_FINISH_COMPLETE
          : s->max_tokens > 0 && s->n_generated >= s->max_tokens ? ML_FINISH_LENGTH
          : s->n_past >= s->ctx->state.max_seq ? ML_FINISH_CONTEXT : ML_FINISH_NONE;
    }
    release(s, f != ML_FINISH_NONE);
    s->finished = f != ML_FINISH_NONE;
    *token = next;
    *finish = f;
    *text = s->out.c_str();
    return ML_OK;
  });
}

}  // namespace

extern "C" ml_status ml_session_next(ml_session *s, int *token, const char **text, int *finish) {
  if (!s || !token || !text || !finish) return fail(ML_E_ARG, "ml_session_next: NULL argument");
  if (const ml_status st = check_next(s, "ml_session_next")) return st;
  for (int n = 1; n > 0;)  // the rest of the prompt, or the token sampled last
    if (const ml_status st = ml_session_prefill(s, 0, &n, nullptr)) return st;
  return choose_next(s, token, text, finish);
}

// The sessions whose last token is not in their KV cache feed it in one ml_eval_family (the
// first of them gives the scratch); then each chooses as ml_session_next, in order. The
// evaluation is checked for all before anything changes; a choice fails only out of memory.
extern "C" ml_status ml_session_next_batch(ml_session *const *ss, int n, int *tokens, const char **texts, int *finishes) {
  if (!ss || n < 1 || !tokens || !texts || !finishes) return fail(ML_E_ARG, "ml_session_next_batch: NULL argument or n %d < 1", n);
  std::vector<ml_ctx *> ctxs;
  std::vector<int> feed, pos;
  std::vector<const float *> logits;
  for (int i = 0; i < n; ++i) {
    if (!ss[i]) return fail(ML_E_ARG, "ml_session_next_batch: session %d is NULL", i);
    if (const ml_status st = check_next(ss[i], "ml_session_next_batch")) return st;
    const int pending = int(ss[i]->tokens.size()) - ss[i]->n_past;
    if (pending > 1)
      return fail(ML_E_ARG, "ml_session_next_batch: session %d has %d prompt tokens to prefill (ml_session_prefill)", i, pending);
    if (pending == 1 &&
        guarded("ml_session_next_batch", [&] {
          return ctxs.push_back(ss[i]->ctx), feed.push_back(ss[i]->tokens.back()), pos.push_back(ss[i]->n_past), ML_OK;
        }))
      return ML_E_NOMEM;
  }
  if (!ctxs.empty()) {
    if (guarded("ml_session_next_batch", [&] { return logits.resize(ctxs.size()), ML_OK; })) return ML_E_NOMEM;
    if (const ml_status st = ml_eval_family(ctxs.data(), feed.data(), pos.data(), int(ctxs.size()), logits.data())) return st;
  }
  ml_status first = ML_OK;
  for (int i = 0, r = 0; i < n; ++i) {
    ml_session *s = ss[i];
    if (s->n_past < int(s->tokens.size())) s->n_past += 1, s->logits = logits[size_t(r++)];
    const ml_status st = choose_next(s, &tokens[i], &texts[i], &finishes[i]);
    if (st && !first) first = st;
  }
  return first;
}

extern "C" ml_status ml_session_echo(ml_session *s, int prev, int token, const char **text) {
  if (!s || !text) return fail(ML_E_ARG, "ml_session_echo: NULL argument");
  return guarded("ml_session_echo", [&] { return *text = (s->out = stream_text(s, prev, token)).c_str(), ML_OK; });
}

extern "C" const int *ml_session_tokens(const ml_session *s, int *n) {
  if (n) *n = s ? int(s->tokens.size()) : 0;
  return s ? s->tokens.data() : nullptr;
}
extern "C" int ml_session_n_past(const ml_session *s) { return s ? s->n_past : 0; }
extern "C" int ml_session_n_generated(const ml_session *s) { return s ? s->n_generated : 0; }
extern "C" const float *ml_session_logits(const ml_session *s) { return s ? s->logits : nullptr; }
extern "C" ml_status ml_session_logprobs(const ml_session *s, float *chosen, const ml_logprob **top, int *n_top) {
  if (!s || !s->logprobs || s->tokens.empty())
    return fail(ML_E_ARG, "ml_session_logprobs: %s", s ? "the session's options ask for no logprobs" : "NULL session");
  if (chosen) *chosen = s->lp_chosen;
  if (top) *top = s->lp_top.data();
  if (n_top) *n_top = s->top_logprobs;
  return ML_OK;
}
