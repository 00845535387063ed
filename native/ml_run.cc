// ml_run: generate text from a .mlb model. stdout carries only the text, in llama2.c run.c's form
// (prompt echoed, generated text streamed, final newline), so outputs compare byte for byte;
// everything else (load facts, speed, errors) goes to stderr.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "native/cli.h"
#include "native/options.h"
#include "structured/ml_structured.h"
#include "runtime/file_map.h"
#include "runtime/ml.h"
#include "runtime/text/chat.h"

namespace {

const char kUsage[] =
    "usage: ml_run MODEL.gguf [options]\n"
    "       ml_run --hf ORG/REPO[:QUANT] [options]\n"
    "       ml_run MODEL.mlb -z TOKENIZER.bin [options]\n"
    "\n"
    "Generates text with a GGUF file as published (architectures llama, qwen2, qwen3; weights of type\n"
    "Q4_K, Q5_K, Q6_K, Q3_K, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, F16, BF16, F32, taken exactly; its own\n"
    "tokenizer), or a legacy-ml model (.mlb, made by tools/convert.py or tools/gen_random.py).\n"
    "stdout gets only the text, as llama2.c's run.c prints it: the prompt, the generated\n"
    "continuation, a final newline. Load facts and speed go to stderr.\n";
const char kEpilogue[] =
    "Exit status: 0, or the ml_status code of the failure (1 I/O, 2 format, 3 shape, 4 memory,\n"
    "5 unsupported CPU, 6 bad argument).\n";

struct Args {
  const char *model = nullptr, *tokenizer = nullptr, *prompt = nullptr, *token_ids = nullptr,
             *logits_path = nullptr, *system = nullptr, *chat_template = nullptr;
  long steps = 256, threads = 0, max_seq = 0;
  int kv_type = 0;  // ML_KV_F32
  const char *cache_dir = nullptr;
  bool map_weights = false;  // --mmap
  float temp = 1.0f, topp = 0.9f;
  unsigned long long seed = 0;
  bool reference = false;
  bool chat = false, steps_given = false, no_thinking = false;
  ml::hub::Options hf;  // --hf ...: the model by name (hub/hub.h)
  ml_sampling chain = chain_defaults();  // --top-k ...: the sampler chain (runtime/sampler.h)
  bool chain_set = false;
  std::vector<int> bias_ids;
  std::vector<float> bias;
  const char *json_schema = nullptr;  // --json-schema FILE
  bool json = false;                  // --json: any JSON object
  static ml_sampling chain_defaults() {
    ml_sampling s;
    ml_sampling_default(&s);
    return s;
  }
};

int print_version() {
  std::printf("legacy-ml ml_run, ISA %s (Highway static target %s)\n", ml_build_isa(), ml_hwy_target());
  if (const char *choice = std::getenv("ML_LAUNCHER_CHOICE"))  // set by the installed bin/ml_run (launcher/)
    std::printf("started by the launcher: %s\n", choice);
  std::printf("model files: .mlb versions 1-2; architectures llama (llama2.c, Llama 2/3, TinyLlama, SmolLM2), "
              "qwen2 (q/k/v biases); RoPE scaling llama3\n");
  std::printf("kernel implementations (kernels/kernel_table.h):\n");
  for (int i = 0; i < ml_kernel_count(); ++i) std::printf("  %-12s %s\n", ml_kernel_name(i), ml_kernel_impl(i));
  return 0;
}

// Returns -1 when parsing succeeded and the program should run, else the exit code.
int parse_args(int argc, char **argv, Args *a) {
  using namespace ml::cli;
  bool version = false;
  long top_k = 0, last_n = 64;
  auto chain = [a](Setter set) -> Setter {
    return [a, set](const char *v) { return a->chain_set = true, set(v); };
  };
  auto number = [](float *dst, float lo, float hi) -> Setter {
    return [=](const char *v) { return parse_float(v, dst) && *dst >= lo && *dst <= hi ? nullptr : "is not a number in range"; };
  };
  Program p{
      "ml_run", kUsage,
      {{"-z, --tokenizer", "PATH", "the model's tokenizer (required for .mlb; a GGUF's own by default): a\n"
                                   "llama2.c tokenizer.bin with exactly the model's n_tokens (its vocab unless\n"
                                   "the .mlb says fewer), or a byte-level BPE file (MLTK, tools/convert.py)\n"
                                   "with at most its vocab", text(&a->tokenizer)},
       {"-i, --prompt", "TEXT", "prompt (UTF-8; special tokens such as <|im_start|> are parsed); default:\n"
                                "empty, i.e. start from BOS alone (byte-level without BOS: from EOS)", text(&a->prompt)},
       {"--token-ids", "IDS", "prompt as token ids instead, e.g. \"1 403 407\" (no BOS is added)", text(&a->token_ids)},
       {"-n, --steps", "N", "positions to run, prompt included (default 256; capped at the context)",
        [a](const char *v) { a->steps_given = true; return integer(&a->steps, 1, 1L << 30, "steps must be an integer >= 1")(v); }},
       {"--temp", "T", "temperature, 0 = greedy (default 1.0)", [a](const char *v) -> const char * {
          return parse_float(v, &a->temp) && a->temp >= 0.0f && std::isfinite(a->temp)
                     ? nullptr : "temperature must be a finite number >= 0"; }},
       {"--top-p", "P", "nucleus sampling threshold in (0, 1]; 1 = off (default 0.9)", [a](const char *v) -> const char * {
          return parse_float(v, &a->topp) && a->topp > 0.0f && a->topp <= 1.0f ? nullptr : "must be a number in (0, 1]"; }},
       {"--seed", "S", "RNG seed, > 0 (default: the current time)", [a](const char *v) -> const char * {
          return parse_u64(v, &a->seed) && a->seed != 0 ? nullptr : "must be an integer >= 1"; }},
       {"-t, --threads", "N", "worker threads including this one (default: one per CPU)",
        integer(&a->threads, 1, 1024, "threads must be an integer in [1, 1024]")},
       {"--max-seq", "N", "use a context of N positions (default: the model's; smaller = less memory)",
        integer(&a->max_seq, 1, 1L << 30)},
       {"--kv-type", "T", "KV cache elements: f32 (default, the reference), f16 (half the cache\n"
                          "memory; rounded to nearest-even on store) or q8_0 (about 0.28 of it;\n"
                          "each head row quantized in blocks of 32, integer attention scores). The\n"
                          "logits differ slightly from f32's, but are the same on every build and\n"
                          "thread count", kv_type(&a->kv_type)},
       {"--cache", "DIR", "a GGUF model: keep its converted weights in DIR and map them on the next\n"
                          "start instead of converting (keyed by the file's contents)", text(&a->cache_dir)},
       {"--mmap", nullptr, "read the weights through the file's mapping (shared with other processes,\n"
                          "pageable) instead of copying them into huge pages, which decodes\n"
                          "up to 30 % faster where the system has them (Linux transparent huge pages;\n"
                          "a .mlb or --cache file of 32 MiB to half the available memory)",
        flag(&a->map_weights)},
       {"--logits", "FILE", "write the float32 logits of every position, raw little-endian\n"
                            "[positions][vocab]; written to a temporary name, renamed when complete",
        text(&a->logits_path)},
       {"--reference", nullptr, "run the scalar reference kernels instead of this build's", flag(&a->reference)},
       {"--chat", nullptr, "chat in the terminal: each line of stdin is a user turn (an empty line is\n"
                           "skipped), the reply goes to stdout followed by a newline; EOF (Ctrl-D)\n"
                           "ends the chat. The prompt format is the tokenizer's chat template; the\n"
                           "KV cache is kept between turns, so a turn evaluates only its new tokens.\n"
                           "A reply ends at the format's end-of-turn or a stop token; -n N caps it at\n"
                           "N tokens (default: none). A full context ends the chat (exit status 0)", flag(&a->chat)},
       {"--system", "TEXT", "--chat: the conversation's system message", text(&a->system)},
       {"--chat-template", "F", "--chat: this prompt format instead of the tokenizer's template: chatml\n"
                                "(Qwen2.5, SmolLM2), zephyr (TinyLlama-Chat), llama2, llama3 or qwen3",
        text(&a->chat_template)},
       {"--no-thinking", nullptr, "--chat: the template's enable_thinking = false (Qwen3: each reply starts\n"
                                  "after an empty <think></think> block); other formats ignore it", flag(&a->no_thinking)},
       {"--version", nullptr, "print the build's ISA and the implementation of every kernel", flag(&version)},
       // The sampler chain (runtime/sampler.h: stages in this order; any of them set: the chain draws)
       {"--top-k", "K", "the chain: keep the K most likely tokens (0 = off)", chain(integer(&top_k, 0, 1 << 30))},
       {"--min-p", "P", "the chain: drop tokens below P times the most likely's probability, P in [0, 1)",
        chain(number(&a->chain.min_p, 0.0f, 0.999999f))},
       {"--repeat-penalty", "R", "the chain: logits of tokens among the last --repeat-last-n divided by R\n"
                                 "(multiplied when negative), R > 0; 1 = off", chain(number(&a->chain.repeat_penalty, 1e-6f, 1e6f))},
       {"--repeat-last-n", "N", "the chain: tokens the penalties look back at (default 64; -1 = all)",
        chain(integer(&last_n, -1, 1 << 30))},
       {"--presence-penalty", "P", "the chain: subtracted once from the logit of every token seen",
        chain(number(&a->chain.presence_penalty, -1e6f, 1e6f))},
       {"--frequency-penalty", "P", "the chain: subtracted from a token's logit per time it was seen",
        chain(number(&a->chain.frequency_penalty, -1e6f, 1e6f))},
       {"--logit-bias", "ID=B", "the chain: add B to token ID's logit (repeatable; B = -inf bans it)",
        chain([a](const char *v) -> const char * {
          long id;
          float b;
          const char *eq = std::strchr(v, '=');
          if (!eq || !parse_int(std::string(v, eq).c_str(), 0, 1L << 30, &id) || !parse_float(eq + 1, &b) ||
              std::isnan(b) || b == HUGE_VALF)
            return "must be TOKEN_ID=BIAS, e.g. 13=-inf or 42=2.5";
          return a->bias_ids.push_back(int(id)), a->bias.push_back(b), nullptr;
        })},
       {"--json-schema", "FILE", "decode so that the text is JSON valid under the schema in FILE (the subset\n"
                                 "of docs/json-schema.md); it ends when the value is complete", text(&a->json_schema)},
       {"--json", nullptr, "decode so that the text is a JSON object (--json-schema's engine)", flag(&a->json)}},
      [a](const char *v) -> const char * {
        static std::string msg;
        if (!a->model) return a->model = v, nullptr;
        msg = std::string("unexpected argument ") + v + " (the model is already " + a->model + ")";
        return msg.c_str();
      },
      kEpilogue};
  append_rows(&p, hub_options(&a->hf));
  if (const int rc = parse(p, argc, argv); rc >= 0) return rc;
  if (version) return print_version();
  a->chain.top_k = int(top_k), a->chain.repeat_last_n = int(last_n);
  if (!a->model && !a->hf.wanted()) return usage_error(p, "no model given");
  if (a->model && a->hf.wanted()) return usage_error(p, "give either a model file (%s) or --hf, not both", a->model);
  if (a->prompt && a->token_ids) return usage_error(p, "give either -i or --token-ids, not both");
  if (a->chat && (a->prompt || a->token_ids || a->logits_path))
    return usage_error(p, "--chat reads its turns from stdin: -i, --token-ids and --logits do not apply");
  if (!a->chat && (a->system || a->chat_template || a->no_thinking))
    return usage_error(p, "%s needs --chat", a->system ? "--system" : a->chat_template ? "--chat-template" : "--no-thinking");
  return -1;
}

// --logits output: a temporary file beside the target, renamed into place when complete.
class LogitsFile {
 public:
  ~LogitsFile() {
    if (f_) {
      std::fclose(f_);
      ml::remove_utf8(tmp_.c_str());
    }
  }
  // Refuses, before anything is generated, a path that could only fail at the final rename (a
  // directory, an empty name) or that would replace the model or the tokenizer.
  bool open(const char *path, const char *model, const char *tokenizer) {
    ml::PathInfo st, other;
    const char *why = nullptr;
    if (path[0] == '\0') {
      why = "empty file name";
    } else if (ml::path_info(path, &st)) {
      if (st.is_dir)
        why = "it is a directory";
      else if (ml::path_info(model, &other) && other.dev == st.dev && other.ino == st.ino)
        why = "it is the model file";
      else if (ml::path_info(tokenizer, &other) && other.dev == st.dev && other.ino == st.ino)
        why = "it is the tokenizer file";
    }
    if (why) {
      std::fprintf(stderr, "ml_run: cannot write --logits file %s: %s\n", path, why);
      return false;
    }
    path_ = path;
    tmp_ = path_ + ".tmp" + std::to_string(static_cast<long>(getpid()));
    f_ = ml::fopen_utf8(tmp_.c_str(), "wb");
    if (!f_) std::fprintf(stderr, "ml_run: cannot write --logits file %s: %s\n", path, std::strerror(errno));
    return f_ != nullptr;
  }
  bool write(const float *x, int n) {
    if (!f_) return true;
    if (std::fwrite(x, sizeof(float), static_cast<size_t>(n), f_) == static_cast<size_t>(n)) return true;
    std::fprintf(stderr, "ml_run: writing --logits file %s failed: %s\n", path_.c_str(), std::strerror(errno));
    return false;
  }
  bool commit() {
    if (!f_) return true;
    const bool ok = std::fclose(f_) == 0 && ml::rename_replace(tmp_.c_str(), path_.c_str()) == 0;
    f_ = nullptr;
    if (!ok) {
      std::fprintf(stderr, "ml_run: cannot complete --logits file %s: %s\n", path_.c_str(), std::strerror(errno));
      ml::remove_utf8(tmp_.c_str());
    }
    return ok;
  }

 private:
  std::FILE *f_ = nullptr;
  std::string path_, tmp_;
};

int fail_status(ml_status s) {
  std::fprintf(stderr, "ml_run: %s\n", ml_last_error());
  return s;
}


void print_banner(const Args &a, const ml_model_info &info, double load_ms) {
  static const char *const kType[] = {"F32", "?", "Q4_0", "?", "?", "?", "?", "?", "Q8_0"};
  char head[32] = "";  // a head size other than dim / n_heads (Qwen3)
  if (info.head_dim * info.n_heads != info.dim) std::snprintf(head, sizeof head, " of %d", info.head_dim);
  std::fprintf(stderr,
               "ml_run: %s: %s, dim %d, %d layers, %d/%d heads%s, vocab %d, %s, context %d%s; %s build%s, %d thread%s; "
               "loaded in %.1f ms\n",
               a.model, info.arch, info.dim, info.n_layers, info.n_heads, info.n_kv_heads, head, info.vocab,
               info.wtype >= 0 && info.wtype <= 8 ? kType[info.wtype] : "?", info.max_seq,
               info.kv_type == ML_KV_F16 ? " (f16 KV cache)" : info.kv_type == ML_KV_Q8_0 ? " (q8_0 KV cache)" : "", info.isa,
               a.reference ? " (scalar reference kernels)" : "", info.n_threads, info.n_threads == 1 ? "" : "s",
               load_ms);
}

// Reads one line of stdin (without its "\n" or "\r\n") into *line; false at EOF with nothing read.
bool read_line(std::string *line) {
  line->clear();
  char buf[4096];
  bool any = false;
  while (std::fgets(buf, sizeof buf, stdin)) {
    any = true;
    const size_t n = std::strlen(buf);
    line->append(buf, n);
    if (n > 0 && buf[n - 1] == '\n') break;
  }
  if (!any) return false;
  if (!line->empty() && line->back() == '\n') line->pop_back();
  if (!line->empty() && line->back() == '\r') line->pop_back();
  return true;
}

// A generation session (runtime/ml.h) sampling as the options say (--seed, else the time; the
// chain's flags; --json-schema's constraint) that ends at BOS (as run.c) and at stops[0..n_stop),
// after max_tokens tokens when that is not 0.
struct SessionFree {
  ml_json_vocab *vocab = nullptr;
  ml_json_constraint *constraint = nullptr;
  void operator()(ml_session *s) const {
    ml_session_free(s);
    ml_json_constraint_free(constraint);
    ml_json_vocab_free(vocab);
  }
};
using Session = std::unique_ptr<ml_session, SessionFree>;
Session new_session(ml_ctx *ctx, Args &a, int bos, const int *stops, int n_stop, long max_tokens, ml_status *st) {
  std::vector<int> ends(stops, stops + n_stop);
  if (bos >= 0) ends.insert(ends.begin(), bos);
  ml_session_options o;
  ml_session_options_init(&o);
  o.temperature = a.temp;
  o.top_p = a.topp;
  o.seed = a.seed ? a.seed : static_cast<unsigned long long>(std::time(nullptr));
  o.max_tokens = int(max_tokens);
  o.stop_ids = ends.data();
  o.n_stop_ids = int(ends.size());
  a.chain.temperature = o.temperature, a.chain.top_p = o.top_p, a.chain.seed = o.seed;
  a.chain.n_logit_bias = int(a.bias.size()), a.chain.logit_bias_ids = a.bias_ids.data(), a.chain.logit_bias = a.bias.data();
  if (a.chain_set) o.sampling = &a.chain;
  SessionFree parts;
  std::string schema;
  auto failed = [&parts] { return parts(nullptr), Session(nullptr, SessionFree{}); };  // frees what was made
  if (a.json_schema && (*st = ml::cli::read_file("--json-schema", a.json_schema, &schema))) return failed();
  if (a.json || a.json_schema) {
    if ((*st = ml_json_vocab_new(ctx, &parts.vocab)) ||
        (*st = ml_json_constraint_new(parts.vocab, a.json_schema ? schema.data() : nullptr, schema.size(),
                                      &parts.constraint)))
      return failed();
    o.constraint = ml_json_constraint_get(parts.constraint);
  }
  ml_session *s = nullptr;
  if ((*st = ml_session_new(ctx, &o, &s))) return failed();
  return Session(s, parts);
}

// Writes text to stdout at once (streamed).
void show(const char *text) {
  if (!*text) return;
  std::fputs(text, stdout);
  std::fflush(stdout);
}

// --chat: the conversation is rendered whole every turn (chat_render_ctx) and encoded
// (ml_chat_encode); the tokens already in the KV cache that the new rendering starts with are
// kept and only the rest is evaluated: the new user turn and the template's text around it (and
// the previous reply's tokens again if its text encodes differently from the sampled tokens). The
// reply is sampled until an end-of-turn or stop id (not fed to the model: the next rendering
// writes it), -n tokens, or the end of the context.
int run_chat(ml_ctx *ctx, Args &a, const ml_model_info &info, const ml_tokenizer_info &tok, double load_ms) {
  ml_chat_format fmt = ML_CHAT_UNKNOWN;
  const int *stop_ids = nullptr;
  int n_stop = 0;
  if (const ml_status s = ml::cli::chat_format(ctx, a.chat_template, &fmt, &stop_ids, &n_stop)) return fail_status(s);
  ml_status st = ML_OK;  // a reply ends at the format's end of turn, the tokenizer's stop ids, BOS (as one-shot)
  const Session session = new_session(ctx, a, tok.bos_id, stop_ids, n_stop, a.steps_given ? a.steps : 0, &st);
  if (st) return fail_status(st);
  print_banner(a, info, load_ms);
  std::fprintf(stderr, "ml_run: chat format %s (%s), %d end-of-turn/stop ids; EOF ends the chat\n",
               ml_chat_format_name(fmt), a.chat_template ? "--chat-template" : "the tokenizer's template", n_stop);

  std::vector<std::string> roles, contents;  // the conversation
  if (a.system) {
    roles.emplace_back("system");
    contents.emplace_back(a.system);
  }
#ifdef __EMSCRIPTEN__
  const bool tty = false;  // Emscripten's isatty(0) says yes for a pipe too: no "> " prompt under node
#else
  const bool tty = isatty(0) != 0;
#endif
  std::vector<int> full;  // this turn's whole conversation, encoded
  std::string text;
  std::vector<ml_chat_message> msgs;
  std::string line;
  const int max_seq = info.max_seq;
  int turn = 0;
  for (;;) {
    if (tty) {
      std::fputs("> ", stderr);
      std::fflush(stderr);
    }
    if (!read_line(&line)) break;
    if (line.empty()) continue;  // nothing said: no turn
    ++turn;
    roles.emplace_back("user");
    contents.push_back(line);
    msgs.resize(roles.size());
    for (size_t i = 0; i < roles.size(); ++i) msgs[i] = {roles[i].c_str(), contents[i].c_str()};
    const int add = ML_CHAT_ASSISTANT | (a.no_thinking ? ML_CHAT_NO_THINKING : 0);
    if (const ml_status s = ml::chat_render_ctx(ctx, fmt, msgs.data(), int(msgs.size()), add, nullptr, &text)) {
      if (s != ML_E_ARG) return fail_status(s);
      std::fprintf(stderr, "ml_run: line skipped: %s\n", ml_last_error());  // e.g. not valid UTF-8
      roles.pop_back();
      contents.pop_back();
      --turn;
      continue;
    }
    if (const ml_status s = ml::cli::encode_prompt(ctx, text, true, -1, &full)) return fail_status(s);
    const int n_full = int(full.size());
    if (n_full >= max_seq) {  // the prompt takes n_full positions, the reply at least one more
      std::fprintf(stderr, "ml_run: the context is full: turn %d's prompt is %d tokens, the context holds %d "
                   "positions; the chat ends\n", turn, n_full, max_seq);
      break;
    }
    // Keep the longest prefix already in the cache; evaluate at least the last token (for its logits).
    int keep = 0, n = 0;
    if (const ml_status s = ml_session_set_prompt(session.get(), full.data(), n_full, &keep)) return fail_status(s);
    const double t0 = ml::cli::now_ms();
    do
      if (const ml_status s = ml_session_prefill(session.get(), 0, &n, nullptr)) return fail_status(s);
    while (n > 0);
    const int n_new = n_full - keep;
    const double t1 = ml::cli::now_ms();
    // The reply.
    std::string reply;
    int generated = 0, finish = ML_FINISH_NONE;
    while (finish == ML_FINISH_NONE) {
      int next;
      const char *piece;
      if (const ml_status s = ml_session_next(session.get(), &next, &piece, &finish)) return fail_status(s);
      ++generated;
      reply += piece;
      show(piece);
    }
    const bool context_full = finish == ML_FINISH_CONTEXT;
    std::fputc('\n', stdout);
    std::fflush(stdout);
    const double t2 = ml::cli::now_ms();
    std::fprintf(stderr, "ml_run: turn %d: prompt %d tokens (%d kept in the KV cache), %.1f tok/s; "
                 "generated %d tokens, %.1f tok/s\n", turn, n_new, keep,
                 t1 > t0 ? n_new / (t1 - t0) * 1000.0 : 0.0, generated, t2 > t1 ? generated / (t2 - t1) * 1000.0 : 0.0);
    roles.emplace_back("assistant");
    contents.push_back(reply);
    if (context_full) {
      std::fprintf(stderr, "ml_run: the context is full (%d positions); the chat ends\n", max_seq);
      break;
    }
  }
  return 0;
}

}  // namespace

extern "C" int ml_main(int argc, char **argv) {
  Args a;
  if (const int rc = parse_args(argc, argv, &a); rc >= 0) return rc;
  std::string hf_path;  // --hf: the cached file
  if (a.hf.wanted()) {
    if (const int s = ml::hub::resolve_model(a.hf, "ml_run", &hf_path)) return s;
    a.model = hf_path.c_str();
  }

  const double t_load = ml::cli::now_ms();
  ml_options opt;
  ml_options_init(&opt);
  opt.n_threads = static_cast<int>(a.threads);
  opt.max_seq = static_cast<int>(a.max_seq);
  opt.reference = a.reference;
  opt.kv_type = a.kv_type;
  opt.cache_dir = a.cache_dir;
  opt.map_weights = a.map_weights;
  ml_ctx *ctx = nullptr;
  if (const ml_status s = ml_open(&ctx, a.model, a.tokenizer, &opt)) return fail_status(s);
  struct Closer { ml_ctx *c; ~Closer() { ml_close(c); } } closer{ctx};
  ml_model_info info;
  ml_tokenizer_info tok;
  if (!ml::cli::opened("ml_run", ctx, a.tokenizer != nullptr, &info, &tok)) return ML_E_ARG;
  const double load_ms = ml::cli::now_ms() - t_load;
  if (a.chat) return run_chat(ctx, a, info, tok, load_ms);

  // Prompt tokens.
  std::vector<int> prompt;
  if (a.token_ids) {
    if (!ml::cli::parse_token_ids("ml_run: --token-ids", a.token_ids, a.token_ids + std::strlen(a.token_ids),
                                  " ,\t\n", info.vocab, &prompt))
      return ML_E_ARG;
  } else if (const ml_status s = ml::cli::encode_prompt(ctx, a.prompt ? a.prompt : "", false, tok.eos_id, &prompt)) {
    return fail_status(s);
  }
  if (prompt.empty()) {
    std::fprintf(stderr, "ml_run: %s\n", a.token_ids ? "--token-ids has no token ids"
                 : "the prompt is empty and the tokenizer has neither BOS nor EOS to start from");
    return ML_E_ARG;
  }
  if (static_cast<long>(prompt.size()) > info.max_seq) {
    std::fprintf(stderr, "ml_run: the prompt is %zu tokens but the context holds %d positions\n", prompt.size(),
                 info.max_seq);
    return ML_E_ARG;
  }
  long steps = a.steps;
  if (steps > info.max_seq) {
    std::fprintf(stderr, "ml_run: -n %ld is more than the context; running %d positions\n", steps, info.max_seq);
    steps = info.max_seq;
  }
  const int n_prompt = static_cast<int>(prompt.size());
  int stop = n_prompt;  // run.c stops at a BOS inside the prompt, before feeding it
  for (int j = 1; j < n_prompt; ++j)
    if (prompt[static_cast<size_t>(j)] == tok.bos_id) {
      stop = j;
      break;
    }
  const int n_pre = static_cast<int>(std::min<long>(steps, stop));
  // Generation ends at BOS (run.c), and for byte-level tokenizers at EOS, EOT and the stop ids;
  // `steps` positions at most: the last prompt position samples the first token.
  ml_status st = ML_OK;
  const Session session = new_session(ctx, a, tok.bos_id, tok.stop_ids, tok.n_stop, steps - n_pre + 1, &st);
  if (st) return fail_status(st);

  LogitsFile logits_out;
  if (a.logits_path && !logits_out.open(a.logits_path, a.model, a.tokenizer)) return ML_E_IO;

  print_banner(a, info, load_ms);

  // Generation, with run.c's semantics: position p feeds token p; the next token is the prompt's
  // while there is one, else sampled; a BOS (1) ends the text (byte-level: BOS, EOS, EOT or a stop
  // id; the first prompt token is echoed when it is text); `steps` positions at most. The
  // prompt runs in batches (prefill), then one token per step (decode) — the same bits.
  auto echo = [&](int prev, int next) {
    const char *text = "";
    ml_session_echo(session.get(), prev, next, &text);
    show(text);
  };
  const int *ends = tok.stop_ids, *ends_end = tok.stop_ids + tok.n_stop;
  const double t_start = ml::cli::now_ms();
  if (const ml_status s = ml_session_set_prompt(session.get(), prompt.data(), n_pre, nullptr)) return fail_status(s);
  if (tok.kind == 1 && prompt[0] != tok.bos_id && std::find(ends, ends_end, prompt[0]) == ends_end)
    echo(-1, prompt[0]);  // no BOS: the first token is text too
  const float *logits = nullptr;
  for (int pos = 0, n = 0; pos < n_pre; pos += n) {  // prefill
    if (const ml_status s = ml_session_prefill(session.get(), a.logits_path != nullptr, &n, &logits))
      return fail_status(s);
    for (int t = 0; t < n; ++t) {
      if (a.logits_path && !logits_out.write(logits + size_t(t) * size_t(info.vocab), info.vocab)) return ML_E_IO;
      if (pos + t + 1 < stop) echo(prompt[size_t(pos + t)], prompt[size_t(pos + t) + 1]);  // the prompt's next token
    }
  }
  const double t_prompt_end = ml::cli::now_ms();
  int generated = 0, finish = n_pre == n_prompt && stop == n_prompt ? ML_FINISH_NONE : ML_FINISH_LENGTH;
  while (finish == ML_FINISH_NONE) {  // decode: the last prompt position's logits first
    int next;
    const char *text;
    if (const ml_status s = ml_session_next(session.get(), &next, &text, &finish)) return fail_status(s);
    if (++generated > 1 && !logits_out.write(ml_session_logits(session.get()), info.vocab)) return ML_E_IO;
    show(text);
  }
  std::printf("\n");
  std::fflush(stdout);
  const double t_end = ml::cli::now_ms();
  if (!logits_out.commit()) return ML_E_IO;

  const double prompt_ms = t_prompt_end - t_start, gen_ms = t_end - t_prompt_end;
  std::fprintf(stderr, "ml_run: prompt %d tokens, %.1f tok/s; generated %d tokens, %.1f tok/s\n", n_pre,
               prompt_ms > 0 ? n_pre / prompt_ms * 1000.0 : 0.0, generated,
               gen_ms > 0 ? generated / gen_ms * 1000.0 : 0.0);
  return 0;
}
