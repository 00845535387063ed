// The browser module's C entry points (ml_web_<variant>.mjs, cmake/wasm.cmake). The pages call the
// public C API (runtime/ml.h: ml_open, ml_encode, the ml_session_* generation calls, ml_decode, ...)
// directly through Emscripten's exports; this file adds only what a page cannot do with them:
//   - ml_session_options filled from numbers (mlw_session_options), so JavaScript does not
//     hard-code the struct's layout;
//   - the verification harness (verify/verify.h, the same library the Catch2 tests run) with a
//     sink that hands every check row to JavaScript (Module.onCheck(row)) as it is produced;
//   - build facts and model info as JSON, so JavaScript does not hard-code struct layouts;
//   - a generation configuration (mlw_config_*): the sampler chain (ml_sampling, runtime/sampler.h)
//     with its logit_bias arrays, logprobs/top_logprobs and a JSON constraint
//     (structured/ml_structured.h), owned here so JavaScript sets fields by call, not by offset;
//     a token's logprobs come back as JSON (mlw_logprobs_json).
// Files reach the module through Emscripten's FS (the page writes fetched or picked bytes to
// MEMFS and passes the path to ml_open / mlw_verify_e2e).
#include <emscripten/emscripten.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/ml.h"
#include "structured/ml_structured.h"
#include "verify/verify.h"

namespace {

// Calls Module.onCheck(row) with the parsed row, if the page set it.
EM_JS(void, mlw_emit_check, (const char *json), {
  if (Module['onCheck']) Module['onCheck'](JSON.parse(UTF8ToString(json)));
});

void json_string(std::string &out, const char *s) {
  out += '"';
  for (; *s; ++s) {
    const unsigned char c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", c);
      out += esc;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

void json_number(std::string &out, double v) {
  if (v != v || v - v != 0) {  // NaN, +-inf: JSON has none
    out += "null";
    return;
  }
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  out += b;
}

void sink(const ml_check *c, void *) {
  std::string j = "{\"group\":";
  json_string(j, c->group);
  j += ",\"name\":";
  json_string(j, c->name);
  j += ",\"shape\":";
  json_string(j, c->shape);
  j += ",\"max_err\":";
  json_number(j, c->max_err);
  j += ",\"tol\":";
  json_number(j, c->tol);
  j += ",\"cases\":" + std::to_string(c->cases);
  j += ",\"pass\":" + std::string(c->pass ? "true" : "false");
  j += ",\"detail\":";
  json_string(j, c->detail);
  j += "}";
  mlw_emit_check(j.c_str());
}

std::string g_json;  // the last JSON answer (valid until the next call)

}  // namespace

extern "C" {

// Verification groups; each returns its number of failed rows and reports every row to onCheck.
EMSCRIPTEN_KEEPALIVE int mlw_verify_kernels(double tol_scale) { return ml_verify_kernels(sink, nullptr, tol_scale); }
EMSCRIPTEN_KEEPALIVE int mlw_verify_quant(double tol_scale) { return ml_verify_quant(sink, nullptr, tol_scale); }
EMSCRIPTEN_KEEPALIVE int mlw_verify_selftest(void) { return ml_verify_selftest(sink, nullptr); }
EMSCRIPTEN_KEEPALIVE int mlw_verify_e2e(const char *model_path, int logit_steps, int greedy_steps, double tol_scale) {
  return ml_verify_e2e(model_path, logit_steps, greedy_steps, sink, nullptr, tol_scale);
}
// Logits of `steps` greedy positions bit-identical at 2..max_threads threads and 1 (the threaded
// module's pool: max_threads <= mlw_max_threads(), wasm/loader_api.cc).
EMSCRIPTEN_KEEPALIVE int mlw_verify_threads(const char *model_path, int steps, int max_threads) {
  return ml_verify_threads(model_path, steps, max_threads, sink, nullptr);
}

// {"isa":"wasm_simd128","hwy":"WASM","simd128":true,"kernels":[["matvec_q8","wasm_simd128"],...]}
EMSCRIPTEN_KEEPALIVE const char *mlw_build_json(void) {
  g_json = "{\"isa\":";
  json_string(g_json, ml_build_isa());
  g_json += ",\"hwy\":";
  json_string(g_json, ml_hwy_target());
#if defined(__wasm_simd128__)
  g_json += ",\"simd128\":true";
#else
  g_json += ",\"simd128\":false";
#endif
  g_json += ",\"kernels\":[";
  for (int i = 0; i < ml_kernel_count(); ++i) {
    if (i) g_json += ',';
    g_json += '[';
    json_string(g_json, ml_kernel_name(i));
    g_json += ',';
    json_string(g_json, ml_kernel_impl(i));
    g_json += ']';
  }
  g_json += "]}";
  return g_json.c_str();
}

// ml_get_info as JSON, or "" when ctx is not open.
EMSCRIPTEN_KEEPALIVE const char *mlw_info_json(const ml_ctx *ctx) {
  ml_model_info i;
  if (ml_get_info(ctx, &i) != ML_OK) return "";
  char b[512];
  std::snprintf(b, sizeof b,
                "{\"dim\":%d,\"hidden_dim\":%d,\"n_layers\":%d,\"n_heads\":%d,\"n_kv_heads\":%d,\"vocab\":%d,"
                "\"max_seq\":%d,\"wtype\":%d,\"shared_classifier\":%d,\"n_threads\":%d,\"file_bytes\":%llu,"
                "\"weight_bytes\":%llu,\"arena_bytes\":%llu,\"kernels\":\"%s\"}",
                i.dim, i.hidden_dim, i.n_layers, i.n_heads, i.n_kv_heads, i.vocab, i.max_seq, i.wtype,
                i.shared_classifier, i.n_threads, static_cast<unsigned long long>(i.file_bytes),
                static_cast<unsigned long long>(i.weight_bytes), static_cast<unsigned long long>(i.arena_bytes),
                i.kernels);
  g_json = b;
  // The tokenizer's facts the generation loop needs (wasm/demo.js): kind, BOS, the stop ids.
  ml_tokenizer_info t;
  if (ml_get_tokenizer_info(ctx, &t) == ML_OK) {
    g_json.pop_back();  // the closing brace
    std::snprintf(b, sizeof b, ",\"tok_kind\":%d,\"n_tokens\":%d,\"bos_id\":%d,\"eos_id\":%d,\"stop_ids\":[", t.kind,
                  t.n_tokens, t.bos_id, t.eos_id);
    g_json += b;
    for (int k = 0; k < t.n_stop; ++k) g_json += (k ? "," : "") + std::to_string(t.stop_ids[k]);
    g_json += "]}";
  }
  return g_json.c_str();
}

// Session options for a page (wasm/ml.js): the sampler (seed as two uint32 halves), max_tokens and
// stop ids (copied by ml_session_new / ml_session_set_options). Valid until the next call.
EMSCRIPTEN_KEEPALIVE const ml_session_options *mlw_session_options(float temperature, float top_p, uint32_t seed_lo,
                                                                  uint32_t seed_hi, int max_tokens, const int *stop_ids,
                                                                  int n_stop) {
  static ml_session_options o;
  ml_session_options_init(&o);
  o.temperature = temperature;
  o.top_p = top_p;
  o.seed = uint64_t(seed_hi) << 32 | seed_lo;
  o.max_tokens = max_tokens;
  o.stop_ids = stop_ids;
  o.n_stop_ids = n_stop;
  return &o;
}

// A session's generation configuration (wasm/ml.js Model.configure): what ml_session_options points
// at must outlive the generation, so it lives here, one per page-side Model.
struct mlw_config {
  const ml_ctx *ctx = nullptr;
  ml_sampling sampling{};
  std::vector<int> bias_ids;
  std::vector<float> bias;
  int logprobs = 0, top_logprobs = 0;
  ml_json_vocab *vocab = nullptr;            // made on the first JSON constraint, kept for the next
  ml_json_constraint *constraint = nullptr;  // NULL: none
  std::vector<std::string> stops;            // stop strings (mlw_config_stops)
  std::vector<const char *> stop_ptrs;
  ml_session_options options{};
};

// A configuration for ctx: ml_sampling_default's chain, no logprobs, no constraint.
EMSCRIPTEN_KEEPALIVE mlw_config *mlw_config_new(const ml_ctx *ctx) {
  mlw_config *c = new mlw_config;
  c->ctx = ctx;
  ml_sampling_default(&c->sampling);
  return c;
}

EMSCRIPTEN_KEEPALIVE void mlw_config_free(mlw_config *c) {
  if (!c) return;
  ml_json_constraint_free(c->constraint);
  ml_json_vocab_free(c->vocab);
  delete c;
}

// The chain's fields (seed as two uint32 halves) and its logit_bias (n entries, copied). Validated
// as ml_session_new will (ml_sampler_configure: the context's sampler, which every session
// reconfigures from its own options); on failure ml_last_error names the field.
EMSCRIPTEN_KEEPALIVE ml_status mlw_config_sampling(mlw_config *c, float temperature, float top_p, uint32_t seed_lo,
                                                   uint32_t seed_hi, int top_k, float min_p, float repeat_penalty,
                                                   int repeat_last_n, float presence_penalty, float frequency_penalty,
                                                   const int *bias_ids, const float *bias, int n_bias) {
  ml_sampling s;
  ml_sampling_default(&s);
  s.temperature = temperature;
  s.top_p = top_p;
  s.seed = uint64_t(seed_hi) << 32 | seed_lo;
  s.top_k = top_k;
  s.min_p = min_p;
  s.repeat_penalty = repeat_penalty;
  s.repeat_last_n = repeat_last_n;
  s.presence_penalty = presence_penalty;
  s.frequency_penalty = frequency_penalty;
  s.n_logit_bias = n_bias;
  s.logit_bias_ids = bias_ids;
  s.logit_bias = bias;
  if (const ml_status st = ml_sampler_configure(const_cast<ml_ctx *>(c->ctx), &s)) return st;
  c->bias_ids.assign(bias_ids, bias_ids + (n_bias > 0 ? n_bias : 0));
  c->bias.assign(bias, bias + (n_bias > 0 ? n_bias : 0));
  s.logit_bias_ids = c->bias_ids.data();
  s.logit_bias = c->bias.data();
  c->sampling = s;
  return ML_OK;
}

EMSCRIPTEN_KEEPALIVE void mlw_config_logprobs(mlw_config *c, int logprobs, int top_logprobs) {
  c->logprobs = logprobs;  // checked by ml_session_new / ml_session_set_options
  c->top_logprobs = top_logprobs;
}

// The JSON constraint: mode 0 none, 1 any JSON object (json_object), 2 the schema (n bytes of JSON
// text). On failure the configuration keeps its earlier constraint and ml_last_error says why (a
// keyword outside the subset is named with its JSON pointer).
EMSCRIPTEN_KEEPALIVE ml_status mlw_config_json(mlw_config *c, int mode, const char *schema, int n) {
  ml_json_constraint *made = nullptr;
  if (mode != 0) {
    if (!c->vocab)
      if (const ml_status st = ml_json_vocab_new(c->ctx, &c->vocab)) return st;
    if (const ml_status st = ml_json_constraint_new(c->vocab, mode == 2 ? schema : nullptr,
                                                    mode == 2 ? size_t(n) : 0, &made))
      return st;
  }
  ml_json_constraint_free(c->constraint);
  c->constraint = made;
  return ML_OK;
}

// The stop strings of the next generations: n NUL-terminated strings one after the other in
// `packed` (copied; n 0: none). The session holds back text that may still begin one.
EMSCRIPTEN_KEEPALIVE void mlw_config_stops(mlw_config *c, const char *packed, int n) {
  c->stops.clear();
  for (int k = 0; k < n; ++k, packed += c->stops.back().size() + 1) c->stops.emplace_back(packed);
  c->stop_ptrs.clear();
  for (const std::string &t : c->stops) c->stop_ptrs.push_back(t.c_str());
}

// The session options of one generation under c: max_tokens and stop ids (copied by
// ml_session_new / ml_session_set_options) with c's chain, stop strings, logprobs and constraint (reset to the
// empty text: each generation is one JSON value). Valid while c lives.
EMSCRIPTEN_KEEPALIVE const ml_session_options *mlw_config_options(mlw_config *c, int max_tokens, const int *stop_ids,
                                                                 int n_stop) {
  ml_session_options &o = c->options;
  ml_session_options_init(&o);
  o.temperature = c->sampling.temperature;
  o.top_p = c->sampling.top_p;
  o.seed = c->sampling.seed;
  o.max_tokens = max_tokens;
  o.stop_ids = stop_ids;
  o.n_stop_ids = n_stop;
  o.sampling = &c->sampling;
  o.logprobs = c->logprobs;
  o.top_logprobs = c->top_logprobs;
  o.n_stop_strings = int(c->stop_ptrs.size());
  o.stop_strings = c->stop_ptrs.data();
  if (c->constraint) {
    ml_json_constraint_reset(c->constraint);
    o.constraint = ml_json_constraint_get(c->constraint);
  }
  return &o;
}

// After ml_session_next with logprobs: {"logprob":x,"top":[[token,logprob],...]} (-inf: null), or
// "" on failure (ml_last_error says why). Valid until the next call.
EMSCRIPTEN_KEEPALIVE const char *mlw_logprobs_json(const ml_session *s) {
  float chosen = 0;
  const ml_logprob *top = nullptr;
  int n_top = 0;
  if (ml_session_logprobs(s, &chosen, &top, &n_top) != ML_OK) return "";
  g_json = "{\"logprob\":";
  json_number(g_json, chosen);
  g_json += ",\"top\":[";
  for (int k = 0; k < n_top; ++k) {
    g_json += k ? ",[" : "[";
    g_json += std::to_string(top[k].token) + ",";
    json_number(g_json, top[k].logprob);
    g_json += "]";
  }
  g_json += "]}";
  return g_json.c_str();
}

// Sizes of the public structs a page allocates (checked against the glue's constants).
EMSCRIPTEN_KEEPALIVE int mlw_sizeof_options(void) { return static_cast<int>(sizeof(ml_options)); }
EMSCRIPTEN_KEEPALIVE int mlw_sizeof_text_stream(void) { return static_cast<int>(sizeof(ml_text_stream)); }

}  // extern "C"

// The glue (wasm/ml.js) lets ml_options_init fill ml_options, then writes its first three int32
// (batch, kv_type, cache_dir and map_weights keep their defaults), and zero-fills ml_text_stream.
static_assert(sizeof(ml_options) == 28 && offsetof(ml_options, n_threads) == 0 && offsetof(ml_options, max_seq) == 4 &&
                  offsetof(ml_options, reference) == 8 && offsetof(ml_options, batch) == 12 &&
                  offsetof(ml_options, kv_type) == 16 && offsetof(ml_options, cache_dir) == 20,
              "wasm/ml.js writes ml_options as {n_threads, max_seq, reference, batch, kv_type} int32, then cache_dir");
static_assert(sizeof(ml_chat_message) == 8 && offsetof(ml_chat_message, role) == 0 &&
                  offsetof(ml_chat_message, content) == 4,
              "wasm/ml.js writes ml_chat_message as {role, content} pointers");
static_assert(sizeof(ml_text_stream) == 12, "wasm/ml.js allocates 12 bytes for ml_text_stream");
