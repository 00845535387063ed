// ml_server: an OpenAI-compatible HTTP server over the C API of runtime/ml.h (cpp-httplib and
// nlohmann-json from Debian; the runtime library does not link them).
//
// Threads: httplib's handler threads parse and validate a request, tokenize it (with the base
// context's tokenizer, under tok_mu_), put a Job on a bounded queue and then wait on a condition
// variable (non-streaming) or stream the job's text as server-sent events. ONE scheduler thread
// owns every slot: it assigns queued jobs to free slots (the slot whose KV cache shares the
// longest token prefix with the prompt), then steps the active slots round-robin — a prefill
// batch or one decoded token each — on the model's one thread pool (-t). Slots are a base context
// and its siblings (ml_open_sibling): one mapped model, one pool, one KV cache per slot, all
// allocated at start. Nothing else touches a slot's context, so evaluation never overlaps.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <pthread.h>
#include <sys/socket.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "kernels/mutants.h"  // ML_MUTANT: false unless the mutation audit's build (tools/mutants.sh)
#include "native/cli.h"
#include "native/options.h"
#include "runtime/ml.h"
#include "runtime/text/unicode.h"

using nlohmann::json;

namespace {

const char kUsage[] =
    "usage: ml_server MODEL.gguf [options]\n"
    "       ml_server --hf ORG/REPO[:QUANT] [options]\n"
    "       ml_server MODEL.mlb -z TOKENIZER [options]\n"
    "\n"
    "Serves a model (a GGUF file as published, types and architectures as for ml_run, or an .mlb)\n"
    "over HTTP with the OpenAI API: POST /v1/completions,\n"
    "POST /v1/chat/completions (both with \"stream\": true as server-sent events), GET /v1/models,\n"
    "GET /health. Request fields: prompt / messages, max_tokens (or max_completion_tokens),\n"
    "temperature, top_p, seed, stop, n (1 only), stream; other fields are ignored. Greedy output\n"
    "(temperature 0) is ml_run's text.\n";
const char kEpilogue[] =
    "Defaults as llama.cpp's llama-server: temperature 0.8, top_p 0.95, max_tokens until the\n"
    "context is full. SIGINT / SIGTERM stop the server.\n"
    "\n"
    "Exit status: 0 when stopped by a signal, or the ml_status code of a startup failure (1 I/O,\n"
    "e.g. the port is taken; 2 format; 3 shape; 4 memory; 5 unsupported CPU; 6 bad argument).\n";

struct Args {
  const char *model = nullptr, *tokenizer = nullptr, *host = "127.0.0.1", *api_key = nullptr,
             *chat_template = nullptr;
  int kv_type = 0;  // ML_KV_F32
  const char *cache_dir = nullptr;
  long port = 8080, parallel = 1, queue = 64, threads = 0, ctx = 0, max_body = 1 << 20;
  ml::hub::Options hf;   // --hf ...: the model by name (hub/hub.h)
  std::string hf_path;   // ... and its file in the cache
};

int parse_args(int argc, char **argv, Args *a) {
  using namespace ml::cli;
  Program p{
      "ml_server", kUsage,
      {{"-z, --tokenizer", "PATH", "the model's tokenizer, as for ml_run (required for .mlb; a GGUF's own by\n"
                                   "default)", text(&a->tokenizer)},
       {"--host", "ADDR", "address to bind (default 127.0.0.1; binding another address without\n"
                          "an API key prints a warning)", text(&a->host)},
       {"--port", "N", "TCP port (default 8080; 0 = any free port, printed on stderr)", integer(&a->port, 0, 65535)},
       {"--parallel", "N", "requests generated at once, each in its own slot with its own KV\n"
                           "cache (default 1)", integer(&a->parallel, 1, 64)},
       {"--queue", "N", "requests that may wait for a slot; more get 503 (default 64)", integer(&a->queue, 0, 4096)},
       {"-t, --threads", "N", "worker threads of the one model thread pool (default: one per CPU)",
        integer(&a->threads, 1, 1024)},
       {"--ctx", "N", "context positions per slot (default: the model's)", integer(&a->ctx, 1, 1L << 30)},
       {"--cache", "DIR", "a GGUF model: keep its converted weights in DIR and map them on the next\n"
                          "start instead of converting (keyed by the file's contents)", text(&a->cache_dir)},
       {"--kv-type", "T", "KV cache elements of every slot: f32 (default, the reference), f16 (half\n"
                          "the cache memory per slot) or q8_0 (about 0.28 of it); slightly\n"
                          "different logits, the same on every build and thread count. The\n"
                          "startup line shows MB per slot", kv_type(&a->kv_type)},
       {"--api-key", "KEY", "every request except GET /health needs \"Authorization: Bearer KEY\"\n"
                            "(default: the ML_API_KEY environment variable; none when unset)", text(&a->api_key)},
       {"--max-body", "BYTES", "largest request body accepted (default 1048576)", integer(&a->max_body, 1, 1L << 30)},
       {"--chat-template", "NAME", "chatml|zephyr|llama2|llama3|qwen3 (default: detected from the tokenizer)",
        text(&a->chat_template)}},
      [a](const char *v) -> const char * {
        static std::string msg;
        if (!a->model) return a->model = v, nullptr;
        return (msg = std::string("unexpected argument ") + v + " (the model is already " + a->model + ")").c_str();
      },
      kEpilogue};
  append_rows(&p, hub_options(&a->hf));
  if (const int rc = parse(p, argc, argv); rc >= 0) return rc;
  if (!a->model && !a->hf.wanted()) return usage_error(p, "no model given");
  if (a->model && a->hf.wanted()) return usage_error(p, "give either a model file (%s) or --hf, not both", a->model);
  if (a->hf.wanted()) {
    if (const int s = ml::hub::resolve_model(a->hf, "ml_server", &a->hf_path)) return s;
    a->model = a->hf_path.c_str();
  }
  return -1;
}

// ---- Requests.

struct HttpError {
  int status;
  std::string message, type;
};

json error_body(int status, const std::string &message, const std::string &type) {
  return json{{"error", {{"message", message}, {"type", type}, {"code", status}}}};
}

void send_error(httplib::Response &res, int status, const std::string &message, const char *type = nullptr) {
  if (!type)
    type = status == 401 ? "authentication_error"
         : status == 404 ? "not_found_error"
         : status == 405 ? "not_supported_error"
         : status == 503 ? "unavailable_error"
         : status >= 500 ? "server_error"
                         : "invalid_request_error";
  res.status = status;
  res.set_content(error_body(status, message, type).dump(-1, ' ', false, json::error_handler_t::replace),
                  "application/json");
}

// Whether a and b are the same bytes, in a time that depends only on their lengths (never on where
// they first differ), so that a client cannot find the key a byte at a time from response times.
bool constant_time_equal(const std::string &a, const std::string &b) {
  // Every byte of the longer string is visited; the result depends on all of them and the lengths.
  const size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= unsigned(x ^ y);
  }
  return diff == 0;
}

// Whether an Authorization header value carries `key`: the scheme "Bearer" (case-insensitive, as
// RFC 7235 says of every auth-scheme, so "bearer KEY" passes as well), one or more spaces, then
// exactly the key, compared in full and in constant time (a prefix, the key plus a suffix, another
// case or an empty credential is refused). `key` is never empty (main refuses an empty key).
bool bearer_matches(const std::string &auth, const std::string &key) {
  static const char kScheme[] = "bearer";
  const size_t n = sizeof kScheme - 1;
  bool scheme = auth.size() > n && auth[n] == ' ';
  for (size_t i = 0; scheme && i < n; ++i) scheme = (auth[i] | 0x20) == kScheme[i];
  // mutant: the scheme not checked (the text after the first space taken as the key)
  size_t at = ML_MUTANT("server_key_scheme") ? auth.find(' ') : scheme ? n : std::string::npos;
  if (at == std::string::npos) return false;
  while (at < auth.size() && auth[at] == ' ') ++at;
  const std::string given = auth.substr(at);
  // mutant: only as many bytes of the key as the client sent are compared (a prefix passes)
  return constant_time_equal(given, ML_MUTANT("server_key_prefix") ? key.substr(0, given.size()) : key);
}

struct Job {
  // Set by the handler before the job is queued, read-only afterwards.
  std::vector<int> prompt;
  std::vector<std::string> stop;  // stop strings
  std::vector<int> end_ids;       // tokens that end generation (BOS, EOS, EOT, the template's)
  int max_tokens = 0;
  float temperature = 0.8f, top_p = 0.95f;
  uint64_t seed = 1;
  bool chat = false, stream = false;
  // Guarded by Server::mu_.
  std::string text;  // the text so far that no stop string can still claim
  std::vector<size_t> ends;  // text.size() after each publish: a stream sends each piece as its own chunk
  bool done = false, cancelled = false;
  std::string finish;  // "stop" | "length" | "error"
  std::string error;
  int n_generated = 0, n_cached = 0, n_evaluated = 0;
  double t_queued = 0, t_prompt_done = 0, t_done = 0;  // ms (ml::cli::now_ms), for "timings"
  std::condition_variable cv;  // (with Server::mu_) text grew or done: wakes this job's handler only
};

struct Slot {
  ml_ctx *ctx = nullptr;
  ml_session *session = nullptr;  // the slot's history and KV cache (runtime/ml.h)
  std::shared_ptr<Job> job;
  uint64_t last_used = 0;
};

class Server {
 public:
  ~Server() {
    stop_scheduler();
    for (Slot &s : slots_) ml_session_free(s.session);
    for (size_t i = slots_.size(); i-- > 1;) ml_close(slots_[i].ctx);  // siblings before the base
    if (!slots_.empty()) ml_close(slots_[0].ctx);
  }

  int run(const Args &a);

 private:
  // Scheduler.
  void scheduler();
  void step(Slot &s);
  void finish(Slot &s, const char *reason, const std::string &error = "");
  void stop_scheduler() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stopping_ = true;
    }
    work_cv_.notify_all();
    if (sched_.joinable()) sched_.join();
  }

  // HTTP.
  void handle_completion(const httplib::Request &req, httplib::Response &res, bool chat);
  std::shared_ptr<Job> make_job(const json &body, bool chat);
  void cancel(const std::shared_ptr<Job> &j) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      j->cancelled = true;
    }
    work_cv_.notify_all();
  }
  // As llama-server's: tokens reused from the slot's KV cache, evaluated, generated, and times
  // (queued -> prompt evaluated -> done; predicted_per_second: generated tokens / decode time).
  static json timings(const Job &j) {
    const double pred_ms = j.t_done - j.t_prompt_done;
    return json{{"cache_n", j.n_cached},
                {"prompt_n", j.n_evaluated},
                {"prompt_ms", j.t_prompt_done - j.t_queued},
                {"predicted_n", j.n_generated},
                {"predicted_ms", pred_ms},
                {"predicted_per_second", pred_ms > 0 ? j.n_generated * 1000.0 / pred_ms : 0.0}};
  }
  json usage(const Job &j) const {
    return json{{"prompt_tokens", int(j.prompt.size())},
                {"completion_tokens", j.n_generated},
                {"total_tokens", int(j.prompt.size()) + j.n_generated}};
  }

  ml_ctx *base_ = nullptr;
  std::vector<Slot> slots_;
  ml_model_info info_{};
  ml_tokenizer_info tok_{};
  std::string model_name_;
  std::string api_key_;
  size_t queue_cap_ = 64;
  int chat_format_ = 0;  // ml_chat_format; 0: none (chat requests fail)
  std::vector<int> chat_stop_;

  std::mutex tok_mu_;  // ml_encode / ml_chat_render on the base context
  std::mutex mu_;      // the queue, every Job's guarded fields, stopping_
  std::condition_variable work_cv_;  // the scheduler waits here for work
  std::deque<std::shared_ptr<Job>> queue_;
  bool stopping_ = false;
  std::thread sched_;
  std::atomic<uint64_t> ids_{0};
  uint64_t tick_ = 0;
};

void Server::finish(Slot &s, const char *reason, const std::string &error) {
  Job &j = *s.job;
  {
    std::lock_guard<std::mutex> lk(mu_);
    j.done = true;
    j.finish = reason;
    j.error = error;
    j.t_done = ml::cli::now_ms();
  }
  j.cv.notify_all();
  s.job.reset();
  s.last_used = ++tick_;
}

// One step of an active slot: a prefill batch, or one sampled token (the session feeds the last).
void Server::step(Slot &s) {
  Job &j = *s.job;
  const int n_prompt = int(j.prompt.size());
  if (ml_session_n_past(s.session) < n_prompt) {
    int n = 0;
    if (ml_session_prefill(s.session, 0, &n, nullptr) != ML_OK) return finish(s, "error", ml_last_error());
    std::lock_guard<std::mutex> lk(mu_);
    j.n_evaluated += n;
    if (ml_session_n_past(s.session) == n_prompt) j.t_prompt_done = ml::cli::now_ms();
    return;
  }
  int next = 0, f = ML_FINISH_NONE;
  const char *text = "";
  if (ml_session_next(s.session, &next, &text, &f) != ML_OK) return finish(s, "error", ml_last_error());
  {
    std::lock_guard<std::mutex> lk(mu_);
    j.n_generated = ml_session_n_generated(s.session);
    if (*text) {  // a piece: a token's text, or what a stop string no longer holds back
      j.text += text;
      j.ends.push_back(j.text.size());
    }
  }
  j.cv.notify_all();
  if (f != ML_FINISH_NONE) finish(s, f == ML_FINISH_LENGTH || f == ML_FINISH_CONTEXT ? "length" : "stop");
}

void Server::scheduler() {
  std::vector<Slot *> active;
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(mu_);
      // Cancelled jobs leave their slot (its KV cache stays, for prefix reuse) or the queue.
      for (Slot &s : slots_)
        if (s.job && s.job->cancelled) {
          s.job->done = true;
          s.job->finish = "cancelled";
          s.job->cv.notify_all();
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
        auto stop = [](Job &j) {
          j.done = true;
          j.finish = "error";
          j.error = "the server is stopping";
          j.cv.notify_all();
        };
        for (Slot &s : slots_)
          if (s.job) stop(*s.job);
        for (auto &j : queue_) stop(*j);
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
        for (const std::string &st : j->stop) stops.push_back(st.c_str());
        ml_session_options o;
        ml_session_options_init(&o);
        o.temperature = j->temperature;
        o.top_p = j->top_p;
        o.seed = j->seed;
        o.max_tokens = j->max_tokens + (ML_MUTANT("server_max_tokens") ? 1 : 0);  // mutant: one more
        o.stop_ids = j->end_ids.data();
        o.n_stop_ids = int(j->end_ids.size());
        o.stop_strings = stops.data();
        o.n_stop_strings = int(stops.size());
        if (ml_session_set_options(best->session, &o) != ML_OK ||
            ml_session_set_prompt(best->session, j->prompt.data(), int(j->prompt.size()), &j->n_cached) != ML_OK) {
          j->done = true;
          j->finish = "error";
          j->error = ml_last_error();
          j->cv.notify_all();
          best->job.reset();
          continue;
        }
        j->t_prompt_done = ml::cli::now_ms();  // again when its prefill completes
      }
      active.clear();
      for (Slot &s : slots_)
        if (s.job) active.push_back(&s);
    }
    for (Slot *s : active) step(*s);
  }
}

std::shared_ptr<Job> Server::make_job(const json &body, bool chat) {
  auto bad = [](const std::string &m) { return HttpError{400, m, "invalid_request_error"}; };
  if (!body.is_object()) throw bad("the request body must be a JSON object");
  auto j = std::make_shared<Job>();
  j->chat = chat;
  auto field = [&](const char *name) -> const json * {
    auto it = body.find(name);
    return it == body.end() || it->is_null() ? nullptr : &*it;
  };
  if (const json *v = field("stream")) {
    if (!v->is_boolean()) throw bad("'stream' must be a boolean");
    j->stream = v->get<bool>();
  }
  if (const json *v = field("n")) {
    if (!v->is_number_integer()) throw bad("'n' must be an integer");
    if (v->get<int64_t>() != 1) throw bad("only n = 1 is supported");
  }
  if (const json *v = field("temperature")) {
    if (!v->is_number()) throw bad("'temperature' must be a number");
    const double t = v->get<double>();
    if (!(t >= 0.0 && t <= 100.0)) throw bad("'temperature' must be in [0, 100]");
    j->temperature = float(t);
  }
  if (const json *v = field("top_p")) {
    if (!v->is_number()) throw bad("'top_p' must be a number");
    const double p = v->get<double>();
    if (!((ML_MUTANT("server_top_p") ? p >= 0.0 : p > 0.0) && p <= 1.0)) throw bad("'top_p' must be in (0, 1]");  // mutant: 0 passes
    j->top_p = float(p);
  }
  if (const json *v = ML_MUTANT("server_seed") ? nullptr : field("seed")) {  // mutant: the request's seed ignored
    if (!v->is_number_integer()) throw bad("'seed' must be an integer");
    j->seed = v->is_number_unsigned() ? v->get<uint64_t>() : uint64_t(v->get<int64_t>());
  } else {
    j->seed = uint64_t(std::time(nullptr)) * 0x9E3779B97F4A7C15ull + ids_.fetch_add(1);
  }
  if (j->seed == 0) j->seed = 1;  // the xorshift state must not be 0
  if (const json *v = field("stop")) {
    if (v->is_string()) {
      j->stop.push_back(v->get<std::string>());
    } else if (v->is_array()) {
      for (const json &s : *v) {
        if (!s.is_string()) throw bad("'stop' must be a string or an array of strings");
        j->stop.push_back(s.get<std::string>());
      }
    } else {
      throw bad("'stop' must be a string or an array of strings");
    }
    j->stop.erase(std::remove(j->stop.begin(), j->stop.end(), std::string()), j->stop.end());
  }
  long max_tokens = -1;
  const char *max_name = field("max_tokens") || !field("max_completion_tokens") ? "max_tokens" : "max_completion_tokens";
  if (const json *v = field(max_name)) {
    if (!v->is_number_integer()) throw bad(std::string("'") + max_name + "' must be an integer");
    const int64_t m = v->get<int64_t>();
    if (m < 1) throw bad(std::string("'") + max_name + "' must be at least 1");
    max_tokens = m > (1L << 30) ? (1L << 30) : long(m);
  }

  // The prompt text.
  std::string text;
  if (chat) {
    const json *msgs = field("messages");
    if (!msgs) throw bad("'messages' is required");
    if (!msgs->is_array() || msgs->empty()) throw bad("'messages' must be a non-empty array");
    std::vector<std::string> roles, contents;
    for (const json &m : *msgs) {
      if (!m.is_object()) throw bad("each message must be an object with 'role' and 'content'");
      auto r = m.find("role"), c = m.find("content");
      if (r == m.end() || !r->is_string()) throw bad("each message needs a string 'role'");
      std::string content;
      if (c == m.end() || c->is_null()) {
        content = "";
      } else if (c->is_string()) {
        content = c->get<std::string>();
      } else if (c->is_array()) {  // content parts: the text ones, joined
        for (const json &part : *c) {
          auto t = part.is_object() ? part.find("text") : part.end();
          if (!part.is_object() || t == part.end() || !t->is_string())
            throw bad("message content parts must be objects with a string 'text'");
          content += t->get<std::string>();
        }
      } else {
        throw bad("a message's 'content' must be a string");
      }
      // The renderer takes C strings: a NUL would silently cut the message there.
      if (content.find('\0') != std::string::npos)
        throw bad("'messages[" + std::to_string(roles.size()) + "].content' contains a NUL character");
      const std::string role = r->get<std::string>();
      if (role != "system" && role != "user" && role != "assistant")
        throw bad("message role '" + role + "' is not one of system, user, assistant");
      roles.push_back(role);
      contents.push_back(content);
    }
    if (chat_format_ == 0)
      throw bad("the model has no chat template this server recognises; start it with --chat-template "
                "chatml|zephyr|llama2|llama3|qwen3");
    std::vector<ml_chat_message> cm;
    for (size_t i = 0; i < roles.size(); ++i) cm.push_back(ml_chat_message{roles[i].c_str(), contents[i].c_str()});
    size_t len = 0;
    ml_chat_render(base_, ml_chat_format(chat_format_), cm.data(), int(cm.size()), 1, nullptr, 0, &len);
    text.assign(len + 1, '\0');
    if (ml_chat_render(base_, ml_chat_format(chat_format_), cm.data(), int(cm.size()), 1, &text[0], text.size(),
                       &len) != ML_OK)
      throw bad(std::string("cannot render the chat: ") + ml_last_error());
    text.resize(len);
  } else {
    const json *p = field("prompt");
    if (!p) throw bad("'prompt' is required");
    if (p->is_string()) {
      text = p->get<std::string>();
    } else if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) {
      text = (*p)[0].get<std::string>();
    } else {
      throw bad("'prompt' must be a string (or an array of one string)");
    }
  }
  if (text.find('\0') != std::string::npos) throw bad("the prompt contains a NUL character");

  // Tokens: a prompt as ml_run (BOS first; byte-level without BOS and an empty prompt starts
  // from EOS), a chat as ml_chat_encode (BOS only where the template writes it).
  {
    std::lock_guard<std::mutex> lk(tok_mu_);
    j->prompt.resize(ml_encode_bound(base_, text.size()) + 1);
    int n = 0;
    const ml_status s = chat ? ml_chat_encode(base_, text.c_str(), j->prompt.data(), int(j->prompt.size()), &n)
                             : ml_encode(base_, text.c_str(), 1, j->prompt.data(), int(j->prompt.size()), &n);
    if (s != ML_OK) throw bad(std::string("cannot tokenize the prompt: ") + ml_last_error());
    j->prompt.resize(size_t(n));
  }
  if (j->prompt.empty()) {
    if (tok_.eos_id < 0) throw bad("the prompt is empty and the tokenizer has neither BOS nor EOS to start from");
    j->prompt.push_back(tok_.eos_id);
  }
  const long n_prompt = long(j->prompt.size());
  if (n_prompt >= info_.max_seq)
    throw bad("the prompt is " + std::to_string(n_prompt) + " tokens but the context holds " +
              std::to_string(info_.max_seq) + " positions (and needs room to generate)");
  if (max_tokens < 0) max_tokens = info_.max_seq - n_prompt;
  if (n_prompt + max_tokens > info_.max_seq)
    throw bad("max_tokens " + std::to_string(max_tokens) + " with a prompt of " + std::to_string(n_prompt) +
              " tokens is past the context of " + std::to_string(info_.max_seq) + " positions (at most " +
              std::to_string(info_.max_seq - n_prompt) + ")");
  j->max_tokens = int(max_tokens);
  // Ends: BOS (as run.c), the tokenizer's EOS/EOT/stop ids, for chats the template's end of turn.
  if (tok_.bos_id >= 0) j->end_ids.push_back(tok_.bos_id);
  j->end_ids.insert(j->end_ids.end(), tok_.stop_ids, tok_.stop_ids + tok_.n_stop);
  if (chat) j->end_ids.insert(j->end_ids.end(), chat_stop_.begin(), chat_stop_.end());
  return j;
}

std::string sse(const json &j) {
  // An event ends at an empty line; mutant: one newline only (a client's parser never sees it end).
  return "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + (ML_MUTANT("server_sse") ? "\n" : "\n\n");
}

void Server::handle_completion(const httplib::Request &req, httplib::Response &res, bool chat) {
  size_t bad_at = 0;
  if (!ml::unicode::valid_utf8(req.body.data(), req.body.size(), &bad_at))
    return send_error(res, 400, "the request body is not valid UTF-8 (byte " + std::to_string(bad_at) + ")");
  json body;
  try {
    body = json::parse(req.body);
  } catch (const json::exception &e) {
    return send_error(res, 400, std::string("malformed JSON: ") + e.what());
  }
  std::shared_ptr<Job> job;
  try {
    job = make_job(body, chat);
  } catch (const HttpError &e) {
    return send_error(res, e.status, e.message, e.type.c_str());
  } catch (const json::exception &e) {
    return send_error(res, 400, std::string("bad request: ") + e.what());
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (queue_.size() >= queue_cap_)
      return send_error(res, 503, "the server is busy: " + std::to_string(queue_.size()) +
                                      " requests are waiting for a slot; retry later");
    job->t_queued = ml::cli::now_ms();
    queue_.push_back(job);
  }
  work_cv_.notify_all();

  const std::string id = (chat ? "chatcmpl-" : "cmpl-") + std::to_string(ids_.fetch_add(1));
  const int64_t created = int64_t(std::time(nullptr));
  const char *object = chat ? "chat.completion" : "text_completion";
  if (!job->stream) {
    std::unique_lock<std::mutex> lk(mu_);
    job->cv.wait(lk, [&] { return job->done; });
    if (job->finish == "error") {
      const std::string e = job->error;
      lk.unlock();
      return send_error(res, 500, e);
    }
    json choice = {{"index", 0}, {"finish_reason", job->finish}};
    if (chat)
      choice["message"] = {{"role", "assistant"}, {"content", job->text}};
    else
      choice["text"] = job->text, choice["logprobs"] = nullptr;
    json out = {{"id", id},           {"object", object},           {"created", created},
                {"model", model_name_}, {"choices", json::array({choice})}, {"usage", usage(*job)},
                {"timings", timings(*job)}};
    lk.unlock();
    res.set_content(out.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
    return;
  }
  res.set_header("Cache-Control", "no-cache");
  const std::string chunk_object = chat ? "chat.completion.chunk" : "text_completion";
  auto sent = std::make_shared<size_t>(0);  // pieces (Job::ends) sent so far
  auto first = std::make_shared<bool>(true);
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, job, id, created, chunk_object, chat, sent, first](size_t, httplib::DataSink &sink) {
        std::unique_lock<std::mutex> lk(mu_);
        job->cv.wait_for(lk, std::chrono::milliseconds(200), [&] { return job->done || job->ends.size() > *sent; });
        // One chunk per published piece (a token's text, or what a stop string no longer holds back),
        // however many were published since the last call: a fast model streams as a slow one does.
        std::vector<std::string> pieces;
        for (size_t from = *sent ? job->ends[*sent - 1] : 0; *sent < job->ends.size(); ++*sent) {
          pieces.push_back(job->text.substr(from, job->ends[*sent] - from));
          from = job->ends[*sent];
        }
        const bool done = job->done;
        const std::string finish = job->finish, error = job->error;
        const json use = usage(*job), tim = timings(*job);
        lk.unlock();
        auto chunk = [&](const json &delta_or_text, const json &finish_reason) {
          json c = {{"index", 0}, {"finish_reason", finish_reason}};
          if (chat)
            c["delta"] = delta_or_text;
          else
            c["text"] = delta_or_text, c["logprobs"] = nullptr;
          return json{{"id", id}, {"object", chunk_object}, {"created", created}, {"model", model_name_},
                      {"choices", json::array({c})}};
        };
        std::string out;
        if (*first && chat) out += sse(chunk(json{{"role", "assistant"}, {"content", ""}}, nullptr));
        *first = false;
        for (const std::string &piece : pieces)
          out += sse(chunk(chat ? json{{"content", piece}} : json(piece), nullptr));
        if (done) {
          if (finish == "error") {
            out += sse(error_body(500, error, "server_error"));
          } else {
            json last = chunk(chat ? json::object() : json(""), finish);
            last["usage"] = use;
            last["timings"] = tim;
            out += sse(last);
          }
          out += "data: [DONE]\n\n";
        }
        if (!out.empty() && !sink.write(out.data(), out.size())) {
          cancel(job);  // the client went away: its slot is freed before the next token
          return false;
        }
        if (done) sink.done();
        return true;
      },
      [this, job](bool success) {
        if (!success) cancel(job);
      });
}

int Server::run(const Args &a) {
  ml_options o;
  ml_options_init(&o);
  o.n_threads = int(a.threads);
  o.max_seq = int(a.ctx);
  o.kv_type = a.kv_type;
  o.cache_dir = a.cache_dir;
  if (const ml_status s = ml_open(&base_, a.model, a.tokenizer, &o)) {
    std::fprintf(stderr, "ml_server: %s\n", ml_last_error());
    return int(s);
  }
  slots_.resize(size_t(a.parallel));
  slots_[0].ctx = base_;
  for (size_t i = 1; i < slots_.size(); ++i)
    if (const ml_status s = ml_open_sibling(&slots_[i].ctx, base_, &o)) {
      std::fprintf(stderr, "ml_server: slot %zu: %s\n", i, ml_last_error());
      return int(s);
    }
  if (!ml::cli::opened("ml_server", base_, a.tokenizer != nullptr, &info_, &tok_)) return ML_E_ARG;
  for (size_t i = 0; i < slots_.size(); ++i)
    if (const ml_status s = ml_session_new(slots_[i].ctx, nullptr, &slots_[i].session)) {
      std::fprintf(stderr, "ml_server: slot %zu: %s\n", i, ml_last_error());
      return int(s);
    }
  queue_cap_ = size_t(a.queue);
  if (a.api_key)
    api_key_ = a.api_key;
  else if (const char *e = std::getenv("ML_API_KEY"))
    api_key_ = e;
  if ((a.api_key || std::getenv("ML_API_KEY")) && api_key_.empty()) {  // "" would mean no key: never silently
    std::fprintf(stderr, "ml_server: %s is empty: give a key, or leave it out to serve without one\n",
                 a.api_key ? "--api-key" : "ML_API_KEY");
    return int(ML_E_ARG);
  }
  const char *slash = std::strrchr(a.model, '/');
  model_name_ = slash ? slash + 1 : a.model;

  // Chat template: named, else detected; without one, chat requests get a clear 400.
  ml_chat_format f = ML_CHAT_UNKNOWN;
  if (a.chat_template) {
    if (ml_chat_parse_name(a.chat_template, &f) != ML_OK) {
      std::fprintf(stderr, "ml_server: --chat-template %s: %s\n", a.chat_template, ml_last_error());
      return int(ML_E_ARG);
    }
  } else if (ml_chat_detect(base_, &f) != ML_OK) {
    std::fprintf(stderr, "ml_server: %s; /v1/chat/completions is unavailable\n", ml_last_error());
    f = ML_CHAT_UNKNOWN;
  }
  if (f != ML_CHAT_UNKNOWN) {
    const int *ids = nullptr;
    int n = 0;
    if (ml_chat_stop_ids(base_, f, &ids, &n) != ML_OK) {
      std::fprintf(stderr, "ml_server: chat format %s: %s\n", ml_chat_format_name(f), ml_last_error());
      if (a.chat_template) return int(ML_E_ARG);
      f = ML_CHAT_UNKNOWN;  // detected but unusable: completions only
    } else {
      chat_stop_.assign(ids, ids + n);
    }
  }
  chat_format_ = int(f);

  // Signals: SIGINT/SIGTERM are taken by a watcher thread (blocked everywhere else).
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  httplib::Server svr;
  const size_t n_http = size_t(a.parallel) + queue_cap_ + 4;
  svr.new_task_queue = [n_http] { return new httplib::ThreadPool(n_http); };
  svr.set_payload_max_length(size_t(a.max_body));
  svr.set_pre_routing_handler([this](const httplib::Request &req, httplib::Response &res) {
    if (api_key_.empty() || req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
    if (bearer_matches(req.get_header_value("Authorization"), api_key_)) return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, 401, "invalid or missing API key (send \"Authorization: Bearer KEY\")");
    return httplib::Server::HandlerResponse::Handled;
  });
  svr.set_error_handler(httplib::Server::HandlerWithResponse([max_body = a.max_body](const httplib::Request &req,
                                                                                     httplib::Response &res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // ours already
    static const char *const kPaths[] = {"/v1/completions", "/v1/chat/completions", "/v1/models", "/health",
                                         "/completions", "/chat/completions", "/models"};
    const bool known = std::find_if(std::begin(kPaths), std::end(kPaths),
                                    [&](const char *p) { return req.path == p; }) != std::end(kPaths);
    if (res.status == 404 && known)
      send_error(res, 405, "method " + req.method + " is not allowed on " + req.path);
    else if (res.status == 404)
      send_error(res, 404, "no such endpoint: " + req.method + " " + req.path);
    else if (res.status == 413)
      send_error(res, 413, "the request body is larger than the limit of " + std::to_string(max_body) + " bytes");
    else
      send_error(res, res.status, "the request could not be handled (HTTP " + std::to_string(res.status) + ")");
    return httplib::Server::HandlerResponse::Handled;
  }));
  svr.set_exception_handler([](const httplib::Request &, httplib::Response &res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception &e) {
      what = e.what();
    } catch (...) {
    }
    send_error(res, 500, what);
  });
  for (const char *p : {"/v1/completions", "/completions"})
    svr.Post(p, [this](const httplib::Request &req, httplib::Response &res) { handle_completion(req, res, false); });
  for (const char *p : {"/v1/chat/completions", "/chat/completions"})
    svr.Post(p, [this](const httplib::Request &req, httplib::Response &res) { handle_completion(req, res, true); });
  for (const char *p : {"/v1/models", "/models"})
    svr.Get(p, [this](const httplib::Request &, httplib::Response &res) {
      json m = {{"id", model_name_}, {"object", "model"}, {"created", 0}, {"owned_by", "legacy-ml"},
                {"meta", {{"n_ctx", info_.max_seq}, {"n_vocab", info_.vocab}, {"arch", info_.arch}, {"isa", info_.isa}}}};
      res.set_content(json{{"object", "list"}, {"data", json::array({m})}}.dump(), "application/json");
    });
  svr.Get("/health", [this](const httplib::Request &, httplib::Response &res) {
    int busy = 0;
    size_t queued = 0;
    {
      std::lock_guard<std::mutex> lk(mu_);
      for (const Slot &s : slots_) busy += s.job ? 1 : 0;
      queued = queue_.size();
    }
    const json h = {{"status", "ok"}, {"slots_idle", int(slots_.size()) - busy}, {"slots_processing", busy},
                    {"requests_queued", queued}};
    res.set_content(h.dump(), "application/json");
  });

  // httplib listens with a backlog of 5 (compiled into libcpp-httplib): 16 clients connecting at
  // once overflow it and some get a reset. Keep the listening socket's fd and listen() again with
  // a longer queue after binding (Linux then takes the new backlog).
  int listen_fd = -1;
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a second server on a taken
  // port would start and silently share it.
  svr.set_socket_options([&listen_fd](socket_t sock) {
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listen_fd = sock;
  });
  int port = int(a.port);
  if (port == 0) {
    port = svr.bind_to_any_port(a.host);
    if (port < 0) {
      std::fprintf(stderr, "ml_server: cannot bind %s to a free port\n", a.host);
      return int(ML_E_IO);
    }
  } else if (!svr.bind_to_port(a.host, port)) {
    std::fprintf(stderr, "ml_server: cannot bind %s:%d (in use, or not an address of this machine)\n", a.host, port);
    return int(ML_E_IO);
  }
  if (listen_fd >= 0) ::listen(listen_fd, 256);
  const std::string host = a.host;
  const bool loopback = host == "127.0.0.1" || host == "::1" || host == "localhost" || host.rfind("127.", 0) == 0;
  if (!loopback && api_key_.empty())
    std::fprintf(stderr, "ml_server: WARNING: listening on %s without an API key: anyone who can reach this "
                 "address can use the model (pass --api-key KEY or set ML_API_KEY)\n", a.host);
  std::fprintf(stderr, "ml_server: %s: %s, context %d, %d slot%s of %.1f MB (%s KV cache), %d thread%s, %s build; "
               "listening on http://%s:%d\n",
               model_name_.c_str(), info_.arch, info_.max_seq, int(slots_.size()), slots_.size() == 1 ? "" : "s",
               double(info_.arena_bytes) / 1e6, ml_kv_type_name(info_.kv_type), info_.n_threads, info_.n_threads == 1 ? "" : "s", info_.isa, a.host, port);
  std::fflush(stderr);

  sched_ = std::thread(&Server::scheduler, this);
  std::atomic<bool> listen_returned{false};
  std::thread watcher([&svr, &listen_returned, sigs] {
    int sig = 0;
    sigwait(&sigs, &sig);
    // stop() does nothing until listen_after_bind() has started: a signal that comes that early
    // is repeated until it takes.
    while (!listen_returned.load()) {
      svr.stop();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  svr.listen_after_bind();
  // listen_after_bind returned: stopped by a signal, or failed (then wake the watcher ourselves).
  listen_returned.store(true);
  pthread_kill(watcher.native_handle(), SIGTERM);  // blocked here: pending for its sigwait, or ignored
  watcher.join();
  stop_scheduler();
  std::fprintf(stderr, "ml_server: stopped\n");
  return 0;
}

}  // namespace

extern "C" int ml_main(int argc, char **argv) {
  Args a;
  if (const int rc = parse_args(argc, argv, &a); rc >= 0) return rc;
  Server s;
  return s.run(a);
}
