// ml_server: an OpenAI-compatible HTTP server over the C API of runtime/ml.h (cpp-httplib and
// nlohmann-json from Debian; the runtime library does not link them).
//
// The parts: request parsing (server/request.{h,cc}), scheduling: slots, queue, the session per
// slot (server/scheduler.{h,cc}, whose header comment says which thread does what), what is decided
// before a handler runs: routes, API key, CORS (server/http_policy.{h,cc}), the routes beside the
// completions (server/routes.h: routes_info.cc, metrics.cc, the page server/page.html), and here
// the completion routes, the options and main.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "kernels/mutants.h"  // ML_MUTANT: false unless the mutation audit's build (tools/mutants.sh)
#include "native/cli.h"
#include "native/options.h"
#include "runtime/ml.h"
#include "http_policy.h"
#include "request.h"
#include "routes.h"
#include "scheduler.h"
#include "stop_signal.h"

using nlohmann::json;
using namespace ml::server;

namespace {

const char kUsage[] =
    "usage: ml_server MODEL.gguf [options]\n"
    "       ml_server --hf ORG/REPO[:QUANT] [options]\n"
    "       ml_server MODEL.mlb -z TOKENIZER [options]\n"
    "\n"
    "Serves a model (a GGUF file as published, types and architectures as for ml_run, or an .mlb)\n"
    "over HTTP with the OpenAI API: POST /v1/completions,\n"
    "POST /v1/chat/completions (both with \"stream\": true as server-sent events), GET /v1/models,\n"
    "GET /health; as llama-server: GET /metrics (Prometheus text), GET /slots, GET /props, POST\n"
    "/tokenize {\"content\", \"add_special\", \"with_pieces\"}, POST /detokenize {\"tokens\"}; and GET /,\n"
    "a chat page. Request fields: prompt / messages, max_tokens (or max_completion_tokens),\n"
    "temperature, top_p, seed, stop, n (1 only), stream; the sampler chain's top_k, min_p,\n"
    "repeat_penalty, repeat_last_n, presence_penalty, frequency_penalty, logit_bias ({\"token id\":\n"
    "bias in [-100, 100]}, added to the logit); logprobs (chat: with top_logprobs; completions: N):\n"
    "log-softmax of the logits after logit_bias and penalties; response_format json_object or\n"
    "json_schema (docs/json-schema.md's subset): the reply is one valid JSON value; tools and\n"
    "tool_choice (auto, none, required, a named function; Qwen2.5, Qwen3, Llama 3.1+ templates): the\n"
    "reply parsed into tool_calls, a forced call held to the function's parameters. Any other\n"
    "field is a 400 (unsupported field \"functions\") but these, accepted and ignored:\n";
const char kGreedy[] =
    "Greedy output (temperature 0) is ml_run's text.\n";
#ifdef _WIN32
#define ML_SERVER_STOP "Ctrl-C / Ctrl-Break (or closing its console)"
#else
#define ML_SERVER_STOP "SIGINT / SIGTERM"
#endif
const char kEpilogue[] =
    "Defaults as llama.cpp's llama-server: temperature 0.8, top_p 0.95, max_tokens until the\n"
    "context is full. " ML_SERVER_STOP " stop the server.\n"
    "\n"
    "Exit status: 0 when stopped by a signal, or the ml_status code of a startup failure (1 I/O,\n"
    "e.g. the port is taken; 2 format; 3 shape; 4 memory; 5 unsupported CPU; 6 bad argument).\n";

struct Args {
  const char *model = nullptr, *tokenizer = nullptr, *host = "127.0.0.1", *api_key = nullptr,
             *chat_template = nullptr;
  int kv_type = 0;  // ML_KV_F32
  const char *cache_dir = nullptr;
  bool map_weights = false;  // --mmap
  long port = 8080, parallel = 1, queue = 64, threads = 0, ctx = 0, max_body = 1 << 20;
  Cors cors;             // --cors-origin (server/http_policy.h)
  ml::hub::Options hf;   // --hf ...: the model by name (hub/hub.h)
  std::string hf_path;   // ... and its file in the cache
};

int parse_args(int argc, char **argv, Args *a) {
  using namespace ml::cli;
  static std::string help;
  Program p{
      "ml_server", (help = std::string(kUsage) + kIgnoredFields + kGreedy).c_str(),
      {{"-z, --tokenizer", "PATH", "the model's tokenizer, as for ml_run (required for .mlb; a GGUF's own by\n"
                                   "default)", text(&a->tokenizer)},
       {"--host", "ADDR", "numeric IPv4/IPv6 address to bind, or localhost (= 127.0.0.1); default\n"
                          "127.0.0.1; another address without an API key prints a warning", text(&a->host)},
       {"--port", "N", "TCP port (default 8080; 0 = any free port, printed on stderr)", integer(&a->port, 0, 65535)},
       {"--parallel", "N", "requests generated at once, each in its own slot with its own KV\n"
                           "cache (default 1)", integer(&a->parallel, 1, 64)},
       {"--queue", "N", "requests that may wait for a slot; more get 503 (default 64)", integer(&a->queue, 0, 4096)},
       {"-t, --threads", "N", "worker threads of the one model thread pool (default: one per CPU)",
        integer(&a->threads, 1, 1024)},
       {"--ctx", "N", "context positions per slot (default: the model's)", integer(&a->ctx, 1, 1L << 30)},
       {"--cache", "DIR", "a GGUF model: keep its converted weights in DIR and map them on the next\n"
                          "start instead of converting (keyed by the file's contents)", text(&a->cache_dir)},
       {"--mmap", nullptr, "read the weights through the file's mapping (shared with other processes,\n"
                          "pageable) instead of copying them into huge pages, which decodes\n"
                          "up to 30 % faster where the system has them (Linux transparent huge pages;\n"
                          "a .mlb or --cache file of 32 MiB to half the available memory)",
        flag(&a->map_weights)},
       {"--kv-type", "T", "KV cache elements of every slot: f32 (default, the reference), f16 (half\n"
                          "the cache memory per slot) or q8_0 (about 0.28 of it); slightly\n"
                          "different logits, the same on every build and thread count. The\n"
                          "startup line shows MB per slot", kv_type(&a->kv_type)},
       {"--api-key", "KEY", "every request except GET /health, GET / (the page, which asks for the\n"
                            "key) and CORS preflights needs \"Authorization: Bearer KEY\" (default: the\n"
                            "ML_API_KEY environment variable; none when unset)", text(&a->api_key)},
       {"--cors-origin", "ORIGIN", "let pages from ORIGIN (http[s]://HOST[:PORT], exactly as the browser\n"
                                   "sends it) call the server; repeatable; * allows any origin. Default:\n"
                                   "none (browsers refuse cross-origin calls)",
        [a](const char *v) { return a->cors.add(v); }},
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
  // Host names are not resolved: the Linux downloads' ml_server is static (cmake/Portable.cmake),
  // and a static glibc resolves names only through NSS modules it would dlopen from the build
  // machine's glibc. Every build takes the same: a number, or localhost.
  if (std::strcmp(a->host, "localhost") == 0) a->host = "127.0.0.1";
  unsigned char addr[16];
  if (inet_pton(AF_INET, a->host, addr) != 1 && inet_pton(AF_INET6, a->host, addr) != 1)
    return usage_error(p, "--host %s: not a numeric IPv4/IPv6 address (host names are not resolved; "
                       "localhost is 127.0.0.1)", a->host);
  if (a->hf.wanted()) {
    if (const int s = ml::hub::resolve_model(a->hf, "ml_server", &a->hf_path)) return s;
    a->model = a->hf_path.c_str();
  }
  return -1;
}

// ---- Requests.

class Server {
 public:
  int run(const Args &a);

 private:
  void handle_completion(const httplib::Request &req, httplib::Response &res, bool chat);
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
  static json usage(const Job &j) {
    return json{{"prompt_tokens", int(j.prompt.size())},
                {"completion_tokens", j.n_generated},
                {"total_tokens", int(j.prompt.size()) + j.n_generated}};
  }

  Scheduler sched_;
  Metrics metrics_;
  std::string model_name_;
  std::string api_key_;
  Cors cors_;
};

std::string sse(const json &j) {
  // An event ends at an empty line; mutant: one newline only (a client's parser never sees it end).
  return "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + (ML_MUTANT("server_sse") ? "\n" : "\n\n");
}

// OpenAI's logprobs of entries [from, to): chat's {"content": [{token, logprob, bytes, top_logprobs}]},
// completions' {tokens, token_logprobs, top_logprobs: [{token: logprob}], text_offset} (*offset: the
// completion's text length before `from`; the tokens' texts are ml_decode's, before any hold-back).
json logprobs_json(const std::vector<TokenLogprob> &v, size_t from, size_t to, bool chat, size_t *offset) {
  auto bytes = [](const std::string &t) {
    json b = json::array();
    for (unsigned char c : t) b.push_back(int(c));
    return b;
  };
  json content = json::array(), tokens = json::array(), lps = json::array(), tops = json::array(),
       offs = json::array();
  for (size_t i = from; i < to; ++i) {
    json top = chat ? json::array() : json::object();
    for (const auto &t : v[i].top)
      if (chat)
        top.push_back({{"token", t.first}, {"logprob", t.second}, {"bytes", bytes(t.first)}});
      else
        top[t.first] = t.second;
    if (chat) {
      content.push_back({{"token", v[i].text}, {"logprob", v[i].logprob}, {"bytes", bytes(v[i].text)}, {"top_logprobs", top}});
      continue;
    }
    tokens.push_back(v[i].text), lps.push_back(v[i].logprob), tops.push_back(top), offs.push_back(*offset);
    *offset += v[i].text.size();
  }
  if (chat) return json{{"content", content}};
  return json{{"tokens", tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offs}};
}

// The chat reply's message, its tool calls parsed when it was offered tools (call with sched_.mu held).
json reply_message(const Job &j, const std::string &id, std::string *finish) {
  return ml::tools::reply_message(ml_chat_format(j.tool_format), j.reply_prefix + j.text, id, finish);
}

void Server::handle_completion(const httplib::Request &req, httplib::Response &res, bool chat) {
  std::shared_ptr<Job> job;
  try {  // the body's key order kept (object_body): tools are written into the prompt as sent
    job = sched_.make_job(parse_request(object_body(req), chat));
  } catch (const HttpError &e) {
    return send_error(res, e.status, e.message, e.type.c_str());
  } catch (const json::exception &e) {
    return send_error(res, 400, std::string("bad request: ") + e.what());
  }
  if (size_t busy = 0; !sched_.submit(job, &busy))
    return send_error(res, 503, "the server is busy: " + std::to_string(busy) +
                                    " requests are waiting for a slot; retry later");

  const std::string id = (chat ? "chatcmpl-" : "cmpl-") + std::to_string(sched_.next_id());
  const int64_t created = int64_t(std::time(nullptr));
  // A response or a chunk: its one choice holds finish_reason, logprobs, and the text under `key`.
  auto response = [this, id, created](const char *object, const char *key, const json &text, const json &finish,
                                      const json &logprobs) {
    const json c = {{"index", 0}, {"finish_reason", finish}, {"logprobs", logprobs}, {key, text}};
    return json{{"id", id}, {"object", object}, {"created", created}, {"model", model_name_},
                {"choices", json::array({c})}};
  };
  if (!job->req.stream) {
    std::unique_lock<std::mutex> lk(sched_.mu);
    job->cv.wait(lk, [&] { return job->done; });
    metrics_.job_finished(*job);
    if (job->finish == "error") {
      const std::string e = job->error;
      lk.unlock();
      return send_error(res, 500, e);
    }
    size_t offset = 0;
    std::string finish = job->finish;
    // Chat: the message, its tool calls parsed (structured/tools.h).
    const json message = chat ? reply_message(*job, id, &finish) : json(job->text);
    const json lp = job->req.logprobs ? logprobs_json(job->logprobs, 0, job->logprobs.size(), chat, &offset) : json();
    json out = response(chat ? "chat.completion" : "text_completion", chat ? "message" : "text", message, finish, lp);
    out["usage"] = usage(*job);
    out["timings"] = timings(*job);
    lk.unlock();
    res.set_content(out.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
    return;
  }
  res.set_header("Cache-Control", "no-cache");
  auto sent = std::make_shared<size_t>(0);  // pieces (Job::ends) sent so far
  auto first = std::make_shared<bool>(true);
  auto lp_sent = std::make_shared<size_t>(0), lp_offset = std::make_shared<size_t>(0);  // logprobs entries sent
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, job, id, response, chat, sent, first, lp_sent, lp_offset](size_t, httplib::DataSink &sink) {
        std::unique_lock<std::mutex> lk(sched_.mu);
        job->cv.wait_for(lk, std::chrono::milliseconds(200), [&] { return job->done || job->ends.size() > *sent; });
        // One chunk per published piece (a token's text, or what a stop string no longer holds back),
        // however many were published since the last call: a fast model streams as a slow one does.
        std::vector<std::string> pieces;
        for (size_t from = *sent ? job->ends[*sent - 1] : 0; *sent < job->ends.size(); ++*sent) {
          pieces.push_back(job->text.substr(from, job->ends[*sent] - from));
          from = job->ends[*sent];
        }
        // The tokens' logprobs entries published with these pieces go with the last of them.
        json lp = nullptr;
        if (job->req.logprobs && job->logprobs.size() > *lp_sent)
          lp = logprobs_json(job->logprobs, *lp_sent, job->logprobs.size(), chat, lp_offset.get());
        *lp_sent = job->logprobs.size();
        const bool done = job->done;
        std::string finish = job->finish;
        const std::string error = job->error;
        // Offered tools: the reply goes whole, as one delta, when it is done (a call cannot be told from text before).
        json tool_delta = nullptr;
        if (job->tool_format) {
          pieces.clear();
          if (done && finish != "error") tool_delta = ml::tools::reply_delta(reply_message(*job, id, &finish));
        }
        const json use = usage(*job), tim = timings(*job);
        lk.unlock();
        auto chunk = [&](const json &delta_or_text, const json &finish_reason, const json &logprobs = nullptr) {
          return response(chat ? "chat.completion.chunk" : "text_completion", chat ? "delta" : "text", delta_or_text,
                          finish_reason, logprobs);
        };
        std::string out;
        if (*first && chat) out += sse(chunk(json{{"role", "assistant"}, {"content", ""}}, nullptr));
        *first = false;
        if (pieces.empty() && !lp.is_null()) pieces.emplace_back();  // entries of tokens whose text is held back
        for (size_t i = 0; i < pieces.size(); ++i)
          out += sse(chunk(chat ? json{{"content", pieces[i]}} : json(pieces[i]), nullptr,
                           i + 1 == pieces.size() ? lp : json(nullptr)));
        if (!tool_delta.is_null()) out += sse(chunk(tool_delta, nullptr));
        if (done) {
          if (finish == "error") {
            out += sse(json{{"error", {{"message", error}, {"type", "server_error"}, {"code", 500}}}});
          } else {
            json last = chunk(chat ? json::object() : json(""), finish);
            last["usage"] = use;
            last["timings"] = tim;
            out += sse(last);
          }
          out += "data: [DONE]\n\n";
        }
        if (!out.empty() && !sink.write(out.data(), out.size())) {
          sched_.cancel(job);  // the client went away: its slot is freed before the next token
          return false;
        }
        if (done) sink.done();
        return true;
      },
      [this, job](bool success) {
        if (!success) sched_.cancel(job);
        std::lock_guard<std::mutex> lk(sched_.mu);
        metrics_.job_finished(*job);
      });
}

int Server::run(const Args &a) {
  ml_options o;
  ml_options_init(&o);
  o.n_threads = int(a.threads);
  o.max_seq = int(a.ctx);
  o.kv_type = a.kv_type;
  o.cache_dir = a.cache_dir;
  o.map_weights = a.map_weights;
  // Stop requests (SIGINT/SIGTERM, Windows' Ctrl-C) go to the watcher thread only: blocked before
  // the model's thread pool starts, whose workers inherit the mask (server/stop_signal.h).
  StopSignal stop;
  stop.block();
  if (const int rc = sched_.open(a.model, a.tokenizer, o, int(a.parallel), size_t(a.queue))) return rc;
  const char *key = a.api_key ? a.api_key : std::getenv("ML_API_KEY");
  if (key) api_key_ = key;
  if (key && api_key_.empty()) {  // "" would mean no key: never silently
    std::fprintf(stderr, "ml_server: %s is empty: give a key, or leave it out to serve without one\n",
                 a.api_key ? "--api-key" : "ML_API_KEY");
    return int(ML_E_ARG);
  }
  cors_ = a.cors;
  const char *slash = std::strrchr(a.model, '/');
#ifdef _WIN32
  if (const char *b = std::strrchr(a.model, '\\'); b && (!slash || b > slash)) slash = b;  // C:\models\x.gguf
#endif
  model_name_ = slash ? slash + 1 : a.model;
  if (const int rc = sched_.open_chat(a.chat_template)) return rc;

  httplib::Server svr;
  const size_t n_http = size_t(a.parallel) + size_t(a.queue) + 4;
  svr.new_task_queue = [n_http] { return new httplib::ThreadPool(n_http); };
  svr.set_payload_max_length(size_t(a.max_body));
  svr.set_pre_routing_handler([this](const httplib::Request &req, httplib::Response &res) {
    // CORS (server/http_policy.h): an allowed Origin gets Access-Control-Allow-Origin on every
    // answer, errors included; a preflight (OPTIONS) is answered here, without the API key.
    const std::string origin = req.get_header_value("Origin");
    const bool allowed = cors_.allows(origin);
    if (cors_.enabled()) res.set_header("Vary", "Origin");
    if (req.method == "OPTIONS") {
      if (!allowed) {
        send_error(res, 403, origin.empty() ? "a CORS preflight without an Origin header"
                                            : "origin " + origin + " is not allowed (--cors-origin)");
        return httplib::Server::HandlerResponse::Handled;
      }
      for (const auto &h : preflight_headers(origin)) res.set_header(h.first.c_str(), h.second);
      res.status = 204;
      return httplib::Server::HandlerResponse::Handled;
    }
    if (allowed) res.set_header("Access-Control-Allow-Origin", origin);
    bool known = false;
    const Route *route = find_route(req.method, req.path, &known);
    if (api_key_.empty() || (route && route->open)) return httplib::Server::HandlerResponse::Unhandled;
    if (bearer_matches(req.get_header_value("Authorization"), api_key_)) return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, 401, "invalid or missing API key (send \"Authorization: Bearer KEY\")");
    return httplib::Server::HandlerResponse::Handled;
  });
  svr.set_logger([this](const httplib::Request &, const httplib::Response &res) { metrics_.response(res.status); });
  svr.set_error_handler(httplib::Server::HandlerWithResponse([max_body = a.max_body](const httplib::Request &req,
                                                                                     httplib::Response &res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // ours already
    bool known = false;
    find_route(req.method, req.path, &known);
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
                {"meta", {{"n_ctx", sched_.info.max_seq}, {"n_vocab", sched_.info.vocab}, {"arch", sched_.info.arch}, {"isa", sched_.info.isa}}}};
      res.set_content(json{{"object", "list"}, {"data", json::array({m})}}.dump(), "application/json");
    });
  svr.Get("/health", [this](const httplib::Request &, httplib::Response &res) {
    size_t queued = 0;
    int busy = 0;
    const std::vector<Scheduler::SlotView> slots = sched_.slot_views(&queued);
    for (const Scheduler::SlotView &s : slots) busy += s.busy ? 1 : 0;
    const json h = {{"status", "ok"}, {"slots_idle", int(slots.size()) - busy}, {"slots_processing", busy},
                    {"requests_queued", queued}};
    res.set_content(h.dump(), "application/json");
  });
  add_info_routes(svr, sched_, metrics_, model_name_, a.model, int(a.parallel));

  // httplib listens with a backlog of 5 (compiled into libcpp-httplib): 16 clients connecting at
  // once overflow it and some get a reset. Keep the listening socket's fd and listen() again with
  // a longer queue after binding (Linux then takes the new backlog).
  socket_t listen_fd = INVALID_SOCKET;
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a second server on a taken
  // port would start and silently share it. On Windows SO_REUSEADDR itself lets a second socket
  // take a bound port: SO_EXCLUSIVEADDRUSE there, so a taken port is refused as on Linux.
  svr.set_socket_options([&listen_fd](socket_t sock) {
    const int yes = 1;
#ifdef _WIN32
    setsockopt(sock, SOL_SOCKET, SO_EXCLUSIVEADDRUSE, reinterpret_cast<const char *>(&yes), sizeof yes);
#else
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
#endif
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
  if (listen_fd != INVALID_SOCKET) ::listen(listen_fd, 256);  // Windows keeps the first backlog
  const std::string host = a.host;
  const bool loopback = host == "127.0.0.1" || host == "::1" || host.rfind("127.", 0) == 0;
  if (!loopback && api_key_.empty())
    std::fprintf(stderr, "ml_server: WARNING: listening on %s without an API key: anyone who can reach this "
                 "address can use the model (pass --api-key KEY or set ML_API_KEY)\n", a.host);
  std::fprintf(stderr, "ml_server: %s: %s, context %d, %d slot%s of %.1f MB (%s KV cache), %d thread%s, %s build; "
               "listening on http://%s:%d\n",
               model_name_.c_str(), sched_.info.arch, sched_.info.max_seq, int(a.parallel), a.parallel == 1 ? "" : "s",
               double(sched_.info.arena_bytes) / 1e6, ml_kv_type_name(sched_.info.kv_type), sched_.info.n_threads, sched_.info.n_threads == 1 ? "" : "s", sched_.info.isa, a.host, port);
  std::fflush(stderr);

  sched_.start();
  std::atomic<bool> listen_returned{false};
  std::thread watcher([&svr, &listen_returned, &stop] {
    stop.wait();
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
  stop.wake();
  watcher.join();
  sched_.stop();
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
