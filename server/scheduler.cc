// Scheduling (server/scheduler.h): slots, queue, the session per slot.
#include "scheduler.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "kernels/mutants.h"  // ML_MUTANT: false unless the mutation audit's build (tools/mutants.sh)
#include "native/cli.h"

namespace ml::server {

// Ends a job that gets nothing more from a slot (call with the scheduler's mu held).
static void end_job(Job &j, const char *finish, const std::string &error = "") {
  j.done = true;
  j.finish = finish;
  j.error = error;
  j.cv.notify_all();
}

Scheduler::~Scheduler() {
  stop();
  for (Slot &s : slots_) ml_session_free(s.session);
  ml_json_vocab_free(vocab_);
  for (size_t i = slots_.size(); i-- > 1;) ml_close(slots_[i].ctx);  // siblings before the base
  if (!slots_.empty()) ml_close(slots_[0].ctx);
}

void Scheduler::stop() {
  {
    std::lock_guard<std::mutex> lk(mu);
    stopping_ = true;
  }
  work_cv_.notify_all();
  if (sched_.joinable()) sched_.join();
}

void Scheduler::cancel(const std::shared_ptr<Job> &j) {
  {
    std::lock_guard<std::mutex> lk(mu);
    j->cancelled = true;
  }
  work_cv_.notify_all();
}

bool Scheduler::submit(const std::shared_ptr<Job> &j, size_t *busy) {
  {
    std::lock_guard<std::mutex> lk(mu);
    if (queue_.size() >= queue_cap_) return *busy = queue_.size(), false;
    j->t_queued = ml::cli::now_ms();
    queue_.push_back(j);
  }
  work_cv_.notify_all();
  return true;
}

int Scheduler::open(const char *model, const char *tokenizer, const ml_options &o, int parallel, size_t queue_cap) {
  if (const ml_status s = ml_open(&base_, model, tokenizer, &o)) {
    std::fprintf(stderr, "ml_server: %s\n", ml_last_error());
    return int(s);
  }
  slots_.resize(size_t(parallel));
  slots_[0].ctx = base_;
  for (size_t i = 1; i < slots_.size(); ++i)
    if (const ml_status s = ml_open_sibling(&slots_[i].ctx, base_, &o)) {
      std::fprintf(stderr, "ml_server: slot %zu: %s\n", i, ml_last_error());
      return int(s);
    }
  if (!ml::cli::opened("ml_server", base_, tokenizer != nullptr, &info, &tok_)) return ML_E_ARG;
  for (size_t i = 0; i < slots_.size(); ++i)
    if (const ml_status s = ml_session_new(slots_[i].ctx, nullptr, &slots_[i].session)) {
      std::fprintf(stderr, "ml_server: slot %zu: %s\n", i, ml_last_error());
      return int(s);
    }
  queue_cap_ = queue_cap;
  return 0;
}

int Scheduler::open_chat(const char *chat_template) {
  // Chat template: named, else detected (native/cli.h); without one, chat requests get a clear 400.
  ml_chat_format f = ML_CHAT_UNKNOWN;
  const int *ids = nullptr;
  int n = 0;
  if (ml::cli::chat_format(base_, chat_template, &f, &ids, &n) == ML_OK) {
    chat_stop_.assign(ids, ids + n);
    chat_format_ = int(f);
    return 0;
  }
  if (f != ML_CHAT_UNKNOWN)  // a named or detected format without its stop ids: a detected one leaves completions only
    std::fprintf(stderr, "ml_server: chat format %s: %s\n", ml_chat_format_name(f), ml_last_error());
  else if (chat_template)
    std::fprintf(stderr, "ml_server: --chat-template %s: %s\n", chat_template, ml_last_error());
  else
    std::fprintf(stderr, "ml_server: %s; /v1/chat/completions is unavailable\n", ml_last_error());
  return chat_template ? int(ML_E_ARG) : 0;
}

void Scheduler::finish(Slot &s, const char *reason, const std::string &error) {
  std::lock_guard<std::mutex> lk(mu);  // s.job is read under mu (slot_views())
  s.job->t_done = ml::cli::now_ms();
  end_job(*s.job, reason, error);
  s.job.reset();
  s.last_used = ++tick_;
}

// The prompt of one slot, a batch (at most the context's batch size) at a time: the slot queued
// first among those still reading their prompts (decode may have finished some of `active`).
void Scheduler::prefill(const std::vector<Slot *> &active) {
  Slot *s = nullptr;
  for (Slot *a : active)
    if (a->job && ml_session_n_past(a->session) < int(a->job->prompt.size()) && (!s || a->job->t_queued < s->job->t_queued)) s = a;
  if (!s) return;
  Job &j = *s->job;
  int n = 0;
  if (ml_session_prefill(s->session, 0, &n, nullptr) != ML_OK) return finish(*s, "error", ml_last_error());
  std::lock_guard<std::mutex> lk(mu);
  j.n_evaluated += n;
  if (ml_session_n_past(s->session) == int(j.prompt.size())) j.t_prompt_done = ml::cli::now_ms();
}

// One token for every slot whose prompt is in its KV cache: one ml_session_next_batch (one batched
// forward) per info.batch of them, then each slot's text, logprobs and finish are published.
void Scheduler::decode(const std::vector<Slot *> &active) {
  std::vector<Slot *> ds;
  for (Slot *a : active)
    if (ml_session_n_past(a->session) >= int(a->job->prompt.size())) ds.push_back(a);
  for (size_t b = 0; b < ds.size(); b += size_t(info.batch)) {
    const size_t m = std::min(ds.size() - b, size_t(info.batch));
    std::vector<ml_session *> ss(m);
    std::vector<int> prev(m), n_before(m), next(m), f(m);
    std::vector<const char *> text(m);
    for (size_t i = 0; i < m; ++i) {
      ss[i] = ds[b + i]->session;
      int n_hist = 0;
      const int *hist = ml_session_tokens(ss[i], &n_hist);
      prev[i] = n_hist > 0 ? hist[n_hist - 1] : -1;
      n_before[i] = ml_session_n_generated(ss[i]);
    }
    if (ml_session_next_batch(ss.data(), int(m), next.data(), text.data(), f.data()) != ML_OK) {
      const std::string e = ml_last_error();
      for (size_t i = 0; i < m; ++i) finish(*ds[b + i], "error", e);
      continue;
    }
    for (size_t i = 0; i < m; ++i) publish(*ds[b + i], prev[i], n_before[i], next[i], text[i], f[i]);
  }
}

// A slot's chosen token: its text piece, its logprobs, and the finish it brings.
void Scheduler::publish(Slot &s, int prev, int n_before, int next, const char *text, int f) {
  Job &j = *s.job;
  TokenLogprob lp{};
  const bool with_lp = j.req.logprobs && ml_session_n_generated(s.session) > n_before;  // not a stop id
  if (with_lp) {
    const ml_logprob *top = nullptr;
    int n_top = 0;
    if (ml_session_logprobs(s.session, &lp.logprob, &top, &n_top) != ML_OK) return finish(s, "error", ml_last_error());
    auto piece = [&](int t) { const char *p = ml_decode(base_, prev, t); return std::string(p ? p : ""); };
    lp.text = piece(next);
    for (int i = 0; i < n_top; ++i) lp.top.emplace_back(piece(top[i].token), top[i].logprob);
  }
  {
    std::lock_guard<std::mutex> lk(mu);
    j.n_generated = ml_session_n_generated(s.session);
    if (with_lp) j.logprobs.push_back(std::move(lp));
    if (*text) {  // a piece: a token's text, or what a stop string no longer holds back
      j.text += text;
      j.ends.push_back(j.text.size());
    }
  }
  j.cv.notify_all();
  if (f != ML_FINISH_NONE) finish(s, f == ML_FINISH_LENGTH || f == ML_FINISH_CONTEXT ? "length" : "stop");
}

void Scheduler::run() {
  std::vector<Slot *> active;
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(mu);
      // Cancelled jobs leave their slot (its KV cache stays, for prefix reuse) or the queue.
      for (Slot &s : slots_)
        if (s.job && s.job->cancelled) {
          end_job(*s.job, "cancelled");
          s.job.reset();
          s.last_used = ++tick_;
        }
      queue_.erase(std::remove_if(queue_.begin(), queue_.end(), [](const std::shared_ptr<Job> &j) { return j->cancelled; }),
                   queue_.end());
      work_cv_.wait(lk, [&] {
        if (stopping_) return true;
        for (const Slot &s : slots_)
          if (s.job) return true;
        return !queue_.empty();
      });
      if (stopping_) {
        for (Slot &s : slots_)
          if (s.job) end_job(*s.job, "error", "the server is stopping");
        for (auto &j : queue_) end_job(*j, "error", "the server is stopping");
        queue_.clear();
        return;
      }
      // Free slots take queued jobs: the slot holding the longest common token prefix, else the
      // least recently used.
      while (!queue_.empty()) {
        std::shared_ptr<Job> j = queue_.front();
        Slot *best = nullptr;
        size_t best_lcp = 0;
        for (Slot &s : slots_) {
          if (s.job) continue;
          const size_t l = size_t(ml_session_common_prefix(s.session, j->prompt.data(), int(j->prompt.size())));
          if (!best || l > best_lcp || (l == best_lcp && s.last_used < best->last_used)) best = &s, best_lcp = l;
        }
        if (!best) break;
        queue_.pop_front();
        best->job = j;
        // At least the last prompt token is evaluated again: its logits start the generation.
        std::vector<const char *> stops;
        for (const std::string &st : j->req.stop) stops.push_back(st.c_str());
        ml_session_options o;
        ml_session_options_init(&o);
        o.sampling = &j->req.sampling;
        o.constraint = j->constraint ? ml_json_constraint_get(j->constraint.get()) : nullptr;
        o.logprobs = j->req.logprobs ? 1 : 0;
        o.top_logprobs = j->req.top_logprobs;
        o.max_tokens = j->max_tokens + (ML_MUTANT("server_max_tokens") ? 1 : 0);  // mutant: one more
        o.stop_ids = j->end_ids.data();
        o.n_stop_ids = int(j->end_ids.size());
        o.stop_strings = stops.data();
        o.n_stop_strings = int(stops.size());
        if (ml_session_set_options(best->session, &o) != ML_OK ||
            ml_session_set_prompt(best->session, j->prompt.data(), int(j->prompt.size()), &j->n_cached) != ML_OK) {
          end_job(*j, "error", ml_last_error());
          best->job.reset();
          continue;
        }
        j->t_prompt_done = ml::cli::now_ms();  // again when its prefill completes
      }
      active.clear();
      for (Slot &s : slots_)
        if (s.job) active.push_back(&s);
    }
    decode(active);  // the step's policy: server/scheduler.h
    prefill(active);
  }
}

std::shared_ptr<Job> Scheduler::make_job(Request r) {
  auto bad = [](const std::string &m) { return HttpError{400, m, "invalid_request_error"}; };
  auto j = std::make_shared<Job>();
  j->req = std::move(r);
  ml_sampling &sp = j->req.sampling;  // the request's chain, with its seed and logit bias set here
  if (!j->req.has_seed) sp.seed = uint64_t(std::time(nullptr)) * 0x9E3779B97F4A7C15ull + ids_.fetch_add(1);
  if (sp.seed == 0) sp.seed = 1;  // the xorshift state must not be 0
  for (const auto &b : j->req.logit_bias) {
    if (b.first >= info.vocab)
      throw bad("'logit_bias[\"" + std::to_string(b.first) + "\"]': token " + std::to_string(b.first) +
                " is not in the vocabulary (ids 0.." + std::to_string(info.vocab - 1) + ")");
    j->bias_ids.push_back(int(b.first));
    j->bias.push_back(b.second);
  }
  sp.n_logit_bias = int(j->bias_ids.size());
  sp.logit_bias_ids = j->bias_ids.data();
  sp.logit_bias = j->bias.data();
  std::string text = j->req.prompt;
  if (j->req.chat) {
    if (chat_format_ == 0)
      throw bad("the model has no chat template this server recognises; start it with --chat-template "
                "chatml|zephyr|llama2|llama3|qwen3");
    // Tools (structured/tools.h): rendered as the template's tool format; "none" renders the
    // conversation as without tools; "required" / a named function opens the reply with the call
    // and holds it to the function's parameters with the JSON constraint.
    const ml_chat_format f = ml_chat_format(chat_format_);
    Request &q = j->req;
    const bool tools = q.uses_tools();
    if (tools)
      for (size_t i = 0; i < q.roles.size(); ++i)
        if (q.roles[i] == "tool") q.contents[i] = ml::tools::tool_content(f, q.contents[i]);
    std::vector<ml_chat_message> cm;
    for (size_t i = 0; i < q.roles.size(); ++i) cm.push_back(ml_chat_message{q.roles[i].c_str(), q.contents[i].c_str()});
    const ml::ChatTools ct = ml::tools::chat_tools(f, !q.tools.empty() && q.tool_choice != "none", q.tools, q.calls);
    if (ml::chat_render_ctx(base_, f, cm.data(), int(cm.size()), 1, tools ? &ct : nullptr, &text) != ML_OK)
      throw bad(std::string("cannot render the chat: ") + ml_last_error());
    if (!q.tools.empty() && q.tool_choice != "none") j->tool_format = chat_format_;
    if (q.tool_choice == "required" || q.tool_choice == "function") {
      std::string error;
      q.json = true;
      q.json_schema = ml::tools::call_schema(f, q.tools, q.tool_choice == "function" ? q.tool_name : "", &error);
      j->reply_prefix = ml::tools::call_prefix(f);
      text += j->reply_prefix;
    }
  }

  {  // Tokens: as ml_run's (native/cli.h encode_prompt).
    std::lock_guard<std::mutex> lk(tok_mu_);
    if (ml::cli::encode_prompt(base_, text, j->req.chat, tok_.eos_id, &j->prompt) != ML_OK)
      throw bad(std::string("cannot tokenize the prompt: ") + ml_last_error());
  }
  if (j->prompt.empty()) throw bad("the prompt is empty and the tokenizer has neither BOS nor EOS to start from");
  const long n_prompt = long(j->prompt.size());
  if (n_prompt >= info.max_seq)
    throw bad("the prompt is " + std::to_string(n_prompt) + " tokens but the context holds " +
              std::to_string(info.max_seq) + " positions (and needs room to generate)");
  long max_tokens = j->req.max_tokens;
  if (max_tokens < 0) max_tokens = info.max_seq - n_prompt;
  if (n_prompt + max_tokens > info.max_seq)
    throw bad("max_tokens " + std::to_string(max_tokens) + " with a prompt of " + std::to_string(n_prompt) +
              " tokens is past the context of " + std::to_string(info.max_seq) + " positions (at most " +
              std::to_string(info.max_seq - n_prompt) + ")");
  j->max_tokens = int(max_tokens);
  if (j->req.json) {  // a JSON-schema constraint (structured/ml_structured.h); its errors are the engine's
    std::lock_guard<std::mutex> lk(tok_mu_);
    if (!vocab_ && ml_json_vocab_new(base_, &vocab_) != ML_OK)
      throw bad(std::string("'response_format': ") + ml_last_error());
    const std::string &sc = j->req.json_schema;
    ml_json_constraint *c = nullptr;
    if (ml_json_constraint_new(vocab_, sc.empty() ? nullptr : sc.c_str(), sc.size(), &c) != ML_OK)
      throw bad(std::string(j->tool_format ? "'tools' (a function's parameters): " : "'response_format.json_schema.schema': ") +
                ml_last_error());
    j->constraint.reset(c);
  }
  // Ends: BOS (as run.c), the tokenizer's EOS/EOT/stop ids, for chats the template's end of turn.
  if (tok_.bos_id >= 0) j->end_ids.push_back(tok_.bos_id);
  j->end_ids.insert(j->end_ids.end(), tok_.stop_ids, tok_.stop_ids + tok_.n_stop);
  if (j->req.chat) j->end_ids.insert(j->end_ids.end(), chat_stop_.begin(), chat_stop_.end());
  return j;
}

}  // namespace ml::server
