// ml_server's scheduling (server/scheduler.cc): the slots, the queue, the session per slot.
//
// Threads: httplib's handler threads parse and validate a request (server/request.h), make it a Job
// (make_job: tokenized with the base context's tokenizer, under tok_mu_), submit it to a bounded
// queue and then wait on the job's condition variable (non-streaming) or stream its text as
// server-sent events (server/ml_server.cc). ONE scheduler thread owns every slot: it assigns queued
// jobs to free slots (the slot whose KV cache shares the longest token prefix with the prompt),
// then runs steps on the model's one thread pool (-t). Slots are a base context and its siblings
// (ml_open_sibling): one mapped model, one pool, one KV cache per slot, all allocated at start.
// Nothing else touches a slot's context, so evaluation never overlaps.
//
// A step (the policy; llama-server's continuous batching, without mixing prompt tokens into the
// decode batch): (1) decode — every slot whose prompt is in its KV cache gets its next token from
// ONE batched forward (ml_session_next_batch → ml_eval_family: each weight block read once for all
// of them, attention per slot on its own cache and position); (2) prefill — ONE batch (at most the
// context's batch size, 64 by default) of the prompt of the slot queued first among those still
// reading theirs. So a long prompt costs the generating slots one prefill batch per token they
// produce instead of stalling them for the whole prompt, and prompts are read in arrival order.
// Every slot's tokens are bit-identical to running it alone: a batched row gets the bits of a
// one-token forward, and prefill batches give the bits of one-by-one evaluation (runtime/ml.h).
// Data races: slots' contexts, sessions and the forward's scratch are touched by this thread only;
// Job fields the handlers read are written under mu (publish, finish, prefill).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/ml.h"
#include "structured/ml_structured.h"
#include "request.h"

namespace ml::server {

// A generated token's log-probability (ml_session_logprobs) and its top alternatives, with their texts.
struct TokenLogprob {
  std::string text;
  float logprob;
  std::vector<std::pair<std::string, float>> top;
};

struct Job {
  // Set by make_job before the job is queued, read-only afterwards.
  Request req;
  std::vector<int> prompt;
  std::vector<int> end_ids;  // tokens that end generation (BOS, EOS, EOT, the template's)
  int max_tokens = 0;
  std::vector<int> bias_ids;  // the request's logit_bias, as ml_sampling takes it (req.sampling points here)
  std::vector<float> bias;
  std::unique_ptr<ml_json_constraint, void (*)(ml_json_constraint *)> constraint{nullptr, ml_json_constraint_free};
  int tool_format = 0;       // ml_chat_format whose tool calls the reply is parsed for (0: no tools offered)
  std::string reply_prefix;  // what the prompt already wrote of the reply (a forced call's "<tool_call>\n")
  // Guarded by Scheduler::mu.
  std::string text;  // the text so far that no stop string can still claim
  std::vector<size_t> ends;  // text.size() after each publish: a stream sends each piece as its own chunk
  std::vector<TokenLogprob> logprobs;  // with req.logprobs: one per generated token
  bool done = false, cancelled = false;
  std::string finish;  // "stop" | "length" | "error"
  std::string error;
  int n_generated = 0, n_cached = 0, n_evaluated = 0;
  double t_queued = 0, t_prompt_done = 0, t_done = 0;  // ms (ml::cli::now_ms), for "timings"
  std::condition_variable cv;  // (with Scheduler::mu) text grew or done: wakes this job's handler only
};

struct Slot {
  ml_ctx *ctx = nullptr;
  ml_session *session = nullptr;  // the slot's history and KV cache (runtime/ml.h)
  std::shared_ptr<Job> job;
  uint64_t last_used = 0;
};

class Scheduler {
 public:
  ~Scheduler();
  // The model (ml_open's options o) and `parallel` slots; then the chat template (named, else
  // detected). Each prints what fails and returns its ml_status (0: ready).
  int open(const char *model, const char *tokenizer, const ml_options &o, int parallel, size_t queue_cap);
  int open_chat(const char *chat_template);
  void start() { sched_ = std::thread(&Scheduler::run, this); }
  void stop();
  // Throws HttpError (400) for a request the model cannot take (prompt, context, chat template).
  std::shared_ptr<Job> make_job(Request r);
  // Queues the job; false (and *busy: the queue's length) when the queue is full.
  bool submit(const std::shared_ptr<Job> &j, size_t *busy);
  void cancel(const std::shared_ptr<Job> &j);

  // What /health, /slots and /metrics show (server/slots.cc): each slot's state and context use and
  // the queue's length (*queued), read under mu;
  // the tokenizer on the base context for /tokenize (llama-server's add_special: BOS first, special
  // tokens split out of the text) and /detokenize (ml_tokenize --decode's text; HttpError 400
  // naming an id outside the vocabulary).
  struct SlotView {
    int id = 0;
    bool busy = false;
    int n_past = 0;       // positions in the slot's KV cache (an idle slot keeps its last prompt's)
    int n_prompt = 0;     // the job's prompt tokens (0 when idle)
    int n_decoded = 0;    // tokens generated so far for the job
  };
  std::vector<SlotView> slot_views(size_t *queued = nullptr);
  std::vector<int> tokenize(const std::string &text, bool add_special);
  std::string detokenize(const std::vector<long> &ids, int prev = -1);  // prev: the token before ids[0]
  int chat_format() const { return chat_format_; }

  std::mutex mu;  // the queue, every Job's guarded fields, stopping_
  ml_model_info info{};
  uint64_t next_id() { return ids_.fetch_add(1); }

 private:
  void run();
  void decode(const std::vector<Slot *> &active);
  void prefill(const std::vector<Slot *> &active);
  void publish(Slot &s, int prev, int n_before, int next, const char *text, int f);
  void finish(Slot &s, const char *reason, const std::string &error = "");

  ml_ctx *base_ = nullptr;
  std::vector<Slot> slots_;
  ml_tokenizer_info tok_{};
  size_t queue_cap_ = 64;
  int chat_format_ = 0;  // ml_chat_format; 0: none (chat requests fail)
  std::vector<int> chat_stop_;

  ml_json_vocab *vocab_ = nullptr;  // for response_format's constraints: made by the first, under tok_mu_
  std::mutex tok_mu_;  // ml_encode / ml_chat_render on the base context, vocab_
  std::condition_variable work_cv_;  // the scheduler waits here for work
  std::deque<std::shared_ptr<Job>> queue_;
  bool stopping_ = false;
  std::thread sched_;
  std::atomic<uint64_t> ids_{0};
  uint64_t tick_ = 0;
};

}  // namespace ml::server
