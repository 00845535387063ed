// The C API of runtime/ml.h over Model, Tokenizer, State, ThreadPool and Sampler.
#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "kernels/binding.h"
#include "kernels/mutants.h"
#include "runtime/context.h"
#include "runtime/error.h"
#include "runtime/gguf.h"
#include "runtime/ml.h"
#include "runtime/text/unicode.h"

using namespace ml;

extern "C" void ml_options_init(ml_options *o) {
  o->n_threads = 0;
  o->max_seq = 0;
  o->reference = 0;
  o->batch = 0;
  o->kv_type = ML_KV_F32;
  o->cache_dir = nullptr;
  o->map_weights = 0;
}

extern "C" ml_status ml_kv_type_parse(const char *name, int *type) {
  if (!name || !type) return fail(ML_E_ARG, "ml_kv_type_parse: NULL argument");
  if (!std::strcmp(name, "f32")) *type = ML_KV_F32;
  else if (!std::strcmp(name, "f16")) *type = ML_KV_F16;
  else if (!std::strcmp(name, "q8_0")) *type = ML_KV_Q8_0;
  else return fail(ML_E_ARG, "KV cache type '%s': choose f32, f16 or q8_0", name);
  return ML_OK;
}

extern "C" const char *ml_kv_type_name(int type) {
  return type == ML_KV_F32 ? "f32" : type == ML_KV_F16 ? "f16" : type == ML_KV_Q8_0 ? "q8_0" : "unknown";
}

namespace {

// The per-context part of opening (ml_open and ml_open_sibling): the arena with the KV cache and
// every buffer for this context length, batch and thread count (measured, allocated, assigned),
// the RoPE tables, the sampler, and which kernels the forward pass runs.
ml_status setup_state(ml_ctx *ctx, const ml_options &o, int threads) {
  const Config &c = ctx->model.cfg;
  int max_seq = c.max_seq;
  if (o.max_seq > 0 && o.max_seq < max_seq) max_seq = o.max_seq;
  const int batch = o.batch > 0 ? o.batch : 64;
  if (o.kv_type != ML_KV_F32 && o.kv_type != ML_KV_F16 && o.kv_type != ML_KV_Q8_0)
    return fail(ML_E_ARG, "kv_type %d is not ML_KV_F32 (0), ML_KV_F16 (1) or ML_KV_Q8_0 (2)", o.kv_type);
  layout_state(ctx->arena, ctx->state, c, max_seq, batch, threads, o.kv_type);
  const uint64_t need = ctx->arena.measured();
  if (!ctx->arena.allocate())
    return fail(ML_E_NOMEM, "cannot allocate %llu bytes of runtime memory (KV cache for %d positions)",
                static_cast<unsigned long long>(need), max_seq);
  layout_state(ctx->arena, ctx->state, c, max_seq, batch, threads, o.kv_type);
  bind_activations(ctx->state, c);
  fill_rope_tables(ctx->state, c);
  ctx->reference = o.reference != 0;
  ctx->sampler.init(c.vocab, ctx->state.probs, ctx->state.cand,
                    ctx->reference ? ml::ScalarKernels::softmax : ml::BuildKernels::softmax);
  ctx->sampler.configure(0.0f, 0.9f, 1);
  ctx->forward = ctx->reference ? forward_reference() : forward_build();
  return ML_OK;
}

// ml_open and ml_open_memory: everything but where the model comes from (load(model, pool, options)).
template <class Load>
ml_status open_ctx(ml_ctx **out, const char *model_name, const char *tokenizer_path, const ml_options *opts, Load load) {
  *out = nullptr;
  ml_options o;
  ml_options_init(&o);
  if (opts) o = *opts;
  if (o.n_threads < 0 || o.n_threads > 1024)
    return fail(ML_E_ARG, "thread count %d is out of range [1, 1024] (0 = one per CPU)", o.n_threads);
  if (o.max_seq < 0) return fail(ML_E_ARG, "max_seq %d must be >= 0 (0 = the model's)", o.max_seq);
  if (o.batch < 0 || o.batch > 4096) return fail(ML_E_ARG, "batch %d is out of range [1, 4096] (0 = 64)", o.batch);

  ml_ctx *ctx = new (std::nothrow) ml_ctx();
  if (!ctx) return fail(ML_E_NOMEM, "cannot allocate the context");
  auto bail = [&](ml_status s) {
    delete ctx;
    return s;
  };
  const int threads = o.n_threads > 0 ? o.n_threads : online_cpus();
  if (const ml_status s = ctx->pool.start(threads)) return bail(s);  // first: a GGUF's conversion uses it
  if (const ml_status s = load(&ctx->model, &ctx->pool, o)) return bail(s);
  const Config &c = ctx->model.cfg;
  // llama2.c files carry no count: exactly n_tokens entries; MLTK files state theirs: at most vocab.
  const auto load_tokenizer = [&](const uint8_t *data, uint64_t size, const char *name) {
    const int want = BpeTokenizer::is_mltk(data, size) ? c.vocab : c.n_tokens;
    const ml_status s = ctx->tokenizer.load(data, size, want, name);
    ctx->has_tokenizer = s == ML_OK;
    return s;
  };
  if (tokenizer_path) {
    FileMap f;
    if (const ml_status s = f.open(tokenizer_path, "tokenizer")) return bail(s);
    if (const ml_status s = load_tokenizer(f.data(), f.size(), tokenizer_path)) return bail(s);
  } else if (!ctx->model.tokenizer_image.empty()) {  // a GGUF's own (runtime/gguf_vocab.cc)
    const std::string name = std::string(model_name) + " (its tokenizer metadata)";
    const std::vector<uint8_t> &img = ctx->model.tokenizer_image;
    if (const ml_status s = load_tokenizer(img.data(), img.size(), name.c_str())) return bail(s);
  }
  if (const ml_status s = setup_state(ctx, o, threads)) return bail(s);
  *out = ctx;
  return ML_OK;
}

}  // namespace

extern "C" ml_status ml_open(ml_ctx **out, const char *model_path, const char *tokenizer_path,
                             const ml_options *opts) {
  clear_error();
  if (out == nullptr) return fail(ML_E_ARG, "ml_open: out is NULL");
  return open_ctx(out, model_path, tokenizer_path, opts, [&](Model *m, ThreadPool *pool, const ml_options &o) {
    return load_model(m, model_path, pool, o.cache_dir, o.map_weights != 0);
  });
}

extern "C" ml_status ml_open_memory(ml_ctx **out, const void *data, uint64_t size, const char *name,
                                    const char *tokenizer_path, const ml_options *opts) {
  clear_error();
  if (out == nullptr) return fail(ML_E_ARG, "ml_open_memory: out is NULL");
  *out = nullptr;
  if (data == nullptr) return fail(ML_E_ARG, "ml_open_memory: data is NULL");
  if (reinterpret_cast<uintptr_t>(data) % 64 != 0)
    return fail(ML_E_ARG, "ml_open_memory: data must be 64-byte aligned (aligned_alloc(64, size))");
  const char *label = name && name[0] ? name : "model in memory";
  return open_ctx(out, label, tokenizer_path, opts, [&](Model *m, ThreadPool *pool, const ml_options &) {
    return load_model_from_memory(m, static_cast<const uint8_t *>(data), size, label, pool);
  });
}

ml_status ml::ml_open_streamed(ml_ctx **out, GgufStream *stream, const char *name, const char *tokenizer_path,
                               const ml_options *opts) {
  clear_error();
  return open_ctx(out, name && name[0] ? name : "GGUF", tokenizer_path, opts,
                  [&](Model *m, ThreadPool *, const ml_options &) { return stream->finish(m); });
}

extern "C" void ml_close(ml_ctx *ctx) { delete ctx; }

extern "C" ml_status ml_get_info(const ml_ctx *ctx, ml_model_info *info) {
  if (!ctx || !info) return fail(ML_E_ARG, "ml_get_info: NULL argument");
  const Config &c = ctx->model.cfg;
  info->dim = c.dim;
  info->hidden_dim = c.hidden_dim;
  info->n_layers = c.n_layers;
  info->n_heads = c.n_heads;
  info->n_kv_heads = c.n_kv_heads;
  info->vocab = c.vocab;
  info->max_seq = ctx->state.max_seq;
  info->rope_theta = c.rope_theta;
  info->norm_eps = c.norm_eps;
  info->wtype = c.wtype;
  info->shared_classifier = c.shared_classifier;
  info->n_threads = ctx->threads().size();
  info->batch = ctx->state.batch;
  info->layout = int(c.layout);
  info->isa = isa_row(kBuildIsa).name;
  info->kernels = ctx->reference ? "scalar reference" : "build";
  info->file_bytes = ctx->model.source_bytes;
  info->weight_bytes = ctx->model.weight_bytes_per_token();
  info->arena_bytes = ctx->arena.size();
  info->arch = arch_name(c.arch);
  info->n_tokens = c.n_tokens;
  info->head_dim = c.head_dim();
  info->kv_type = ctx->state.kv_type;
  info->format = ctx->model.gguf ? "gguf" : "mlb";
  info->load_note = ctx->model.load_note.c_str();
  return ML_OK;
}

extern "C" ml_status ml_encode_ex(ml_ctx *ctx, const char *text, int flags, int *tokens, int max_tokens,
                                  int *n_tokens) {
  if (!ctx || !text || !n_tokens || (!tokens && max_tokens != 0)) return fail(ML_E_ARG, "ml_encode: NULL argument");
  if (!ctx->has_tokenizer) return fail(ML_E_ARG, "ml_encode: the context was opened without a tokenizer");
  if (flags & ~(ML_ENCODE_BOS | ML_ENCODE_SPECIAL))
    return fail(ML_E_ARG, "ml_encode: flags 0x%x has bits other than ML_ENCODE_BOS and ML_ENCODE_SPECIAL", flags);
  return ctx->tokenizer.encode(text, (flags & ML_ENCODE_BOS) != 0, (flags & ML_ENCODE_SPECIAL) != 0, tokens,
                               max_tokens, n_tokens);
}

extern "C" ml_status ml_encode(ml_ctx *ctx, const char *text, int add_bos, int *tokens, int max_tokens,
                               int *n_tokens) {
  return ml_encode_ex(ctx, text, ML_ENCODE_SPECIAL | (add_bos ? ML_ENCODE_BOS : 0), tokens, max_tokens, n_tokens);
}

extern "C" size_t ml_encode_bound(const ml_ctx *ctx, size_t text_bytes) {
  if (!ctx || !ctx->has_tokenizer) return 0;
  return ctx->tokenizer.max_tokens(text_bytes);
}

extern "C" const char *ml_decode(const ml_ctx *ctx, int prev, int token) {
  if (!ctx || !ctx->has_tokenizer) return nullptr;
  return ctx->tokenizer.decode(prev, token);
}

extern "C" ml_status ml_get_tokenizer_info(const ml_ctx *ctx, ml_tokenizer_info *info) {
  if (!ctx || !info) return fail(ML_E_ARG, "ml_get_tokenizer_info: NULL argument");
  if (!ctx->has_tokenizer) {
    if (!ctx->model.tokenizer_missing.empty())
      return fail(ML_E_ARG, "%s: pass a tokenizer file", ctx->model.tokenizer_missing.c_str());
    return fail(ML_E_ARG, "ml_get_tokenizer_info: the context was opened without a tokenizer");
  }
  const Tokenizer &t = ctx->tokenizer;
  std::memset(info, 0, sizeof *info);
  info->n_tokens = t.n_tokens();
  if (t.kind() == Tokenizer::kByteLevel) {
    const BpeTokenizer &b = t.bpe();
    info->kind = 1;
    info->bos_id = b.bos_id();
    info->eos_id = b.eos_id();
    info->eot_id = b.eot_id();
    info->pad_id = b.pad_id();
    info->add_bos = b.add_bos();
    info->n_stop = static_cast<int>(b.stop_ids().size());
    info->stop_ids = b.stop_ids().data();
    info->pretokenizer = b.pretokenizer();
    info->normalizer = b.normalizer();
    info->chat_template = b.chat_template().c_str();
    info->chat_template_bytes = b.chat_template().size();
  } else {
    info->kind = 0;
    info->bos_id = 1;
    info->eos_id = t.n_tokens() > 2 ? 2 : -1;
    info->eot_id = info->pad_id = -1;
    info->add_bos = 1;
    info->n_stop = 0;
    static const int kNoStop = -1;
    info->stop_ids = &kNoStop;  // n_stop = 0: nothing to read
    info->pretokenizer = -1;
    info->normalizer = 0;
    info->chat_template = "";
    info->chat_template_bytes = 0;
  }
  return ML_OK;
}

extern "C" ml_status ml_eval_batch(ml_ctx *ctx, const int *tokens, int n, int pos, int all_logits, const float **logits) {
  if (!ctx || !tokens || !logits) return fail(ML_E_ARG, "ml_eval: NULL argument");
  const Config &c = ctx->model.cfg;
  if (n < 1 || n > ctx->state.batch)
    return fail(ML_E_ARG, "%d tokens in one batch; this context takes 1 to %d", n, ctx->state.batch);
  for (int t = 0; t < n; ++t)
    if (tokens[t] < 0 || tokens[t] >= c.vocab)
      return fail(ML_E_ARG, "token id %d is outside the vocabulary [0, %d)", tokens[t], c.vocab);
  if (pos < 0 || pos + n > ctx->state.max_seq)
    return fail(ML_E_ARG, "positions %d..%d are outside the context [0, %d)", pos, pos + n - 1, ctx->state.max_seq);
  if (pos > ctx->n_past)
    return fail(ML_E_ARG, "position %d skips ahead: only %d positions are in the KV cache", pos, ctx->n_past);
  ctx->forward(ctx->model, ctx->state, ctx->threads(), tokens, n, pos, all_logits != 0, nullptr);
  ctx->n_past = pos + n;
  *logits = ctx->state.logits;
  return ML_OK;
}

extern "C" ml_status ml_eval_family(ml_ctx *const *ctxs, const int *tokens, const int *pos, int n, const float **logits) {
  if (!ctxs || !tokens || !pos || !logits || n < 1) return fail(ML_E_ARG, "ml_eval_family: NULL argument or n %d < 1", n);
  for (int i = 0; i < n; ++i)
    if (!ctxs[i]) return fail(ML_E_ARG, "ml_eval_family: context %d is NULL", i);
  ml_ctx *scratch = ctxs[0], *family = scratch->base ? scratch->base : scratch;
  const State &sc = scratch->state;
  if (n > sc.batch) return fail(ML_E_ARG, "ml_eval_family: %d contexts; the first context's batch takes 1 to %d", n, sc.batch);
  State *kv[4096];  // n <= batch <= 4096 (ml_open)
  for (int i = 0; i < n; ++i) {
    ml_ctx *c = ctxs[i];
    if ((c->base ? c->base : c) != family || c->forward != scratch->forward || c->state.kv_type != sc.kv_type)
      return fail(ML_E_ARG, "ml_eval_family: context %d is not of the first context's family, kernels and kv_type", i);
    for (int j = 0; j < i; ++j)
      if (ctxs[j] == c) return fail(ML_E_ARG, "ml_eval_family: contexts %d and %d are the same", j, i);
    if (tokens[i] < 0 || tokens[i] >= c->model.cfg.vocab)
      return fail(ML_E_ARG, "ml_eval_family: token %d is id %d, outside the vocabulary [0, %d)", i, tokens[i], c->model.cfg.vocab);
    if (pos[i] < 0 || pos[i] > c->n_past || pos[i] >= std::min(c->state.max_seq, sc.max_seq))
      return fail(ML_E_ARG, "ml_eval_family: pos %d of context %d is outside [0, %d] (its positions so far, below %d)",
                  pos[i], i, c->n_past, std::min(c->state.max_seq, sc.max_seq));
    kv[i] = &c->state;
  }
  const Rows rows{pos, kv};
  scratch->forward(scratch->model, scratch->state, scratch->threads(), tokens, n, 0, true, &rows);
  const size_t vocab = size_t(scratch->model.cfg.vocab);
  for (int i = 0; i < n; ++i) {  // row i of the scratch's logits is context i's
    if (i > 0) std::memcpy(ctxs[i]->state.logits, sc.logits + size_t(i) * vocab, sizeof(float) * vocab);
    ctxs[i]->n_past = pos[i] + 1;
    logits[i] = ctxs[i]->state.logits;
  }
  return ML_OK;
}

extern "C" ml_status ml_eval(ml_ctx *ctx, int token, int pos, const float **logits) {
  return ml_eval_batch(ctx, &token, 1, pos, 0, logits);
}

extern "C" ml_status ml_sampler_set(ml_ctx *ctx, float temperature, float topp, uint64_t seed) {
  if (!ctx) return fail(ML_E_ARG, "ml_sampler_set: NULL context");
  return ctx->sampler.configure(temperature, topp, seed);
}

extern "C" ml_status ml_sample(ml_ctx *ctx, const float *logits, int *token) {
  if (!ctx || !logits || !token) return fail(ML_E_ARG, "ml_sample: NULL argument");
  *token = ctx->sampler.sample(logits);
  return ML_OK;
}

extern "C" void ml_sampling_default(ml_sampling *s) {
  if (!s) return;
  *s = ml_sampling{};
  s->temperature = 1.0f;
  s->top_p = 0.9f;
  s->seed = 1;
  s->repeat_penalty = 1.0f;
  s->repeat_last_n = 64;
}

extern "C" ml_status ml_sampler_configure(ml_ctx *ctx, const ml_sampling *s) {
  if (!ctx || !s) return fail(ML_E_ARG, "ml_sampler_configure: NULL argument");
  return ctx->sampler.configure_chain(*s);
}

extern "C" ml_status ml_sample_chain(ml_ctx *ctx, const float *logits, const int *history, int n_history, int *token) {
  if (!ctx || !logits || !token || n_history < 0 || (n_history > 0 && !history))
    return fail(ML_E_ARG, "ml_sample_chain: NULL argument");
  *token = ctx->sampler.sample_chain(logits, history, n_history);
  return ML_OK;
}

extern "C" ml_status ml_logprobs(ml_ctx *ctx, const float *logits, const int *history, int n_history, int token,
                                 int n_top, ml_logprob *top, float *chosen) {
  if (!ctx || !logits || n_history < 0 || (n_history > 0 && !history)) return fail(ML_E_ARG, "ml_logprobs: NULL argument");
  return ctx->sampler.logprobs(logits, history, n_history, token, n_top, top, chosen);
}

extern "C" size_t ml_text_stream_feed(ml_text_stream *s, const char *piece, char *out) {
  size_t n = 0;
  const unsigned char *p = reinterpret_cast<const unsigned char *>(piece);
  // A piece of one byte that is a control character is dropped, as llama2.c's safe_printf does.
  if (p[0] != 0 && p[1] == 0 && p[0] < 0x80 && p[0] != '\t' && p[0] != '\n' && p[0] != '\r' &&
      p[0] != '\f' && p[0] != '\v' && (p[0] < 0x20 || p[0] == 0x7F))
    return 0;
  for (; *p; ++p) {
    const unsigned char c = *p;
    if (s->need > 0) {
      if ((c & 0xC0) == 0x80) {
        s->pending[s->n_pending++] = c;
        if (--s->need == 0) {  // complete: emitted when valid (not overlong, a surrogate or past U+10FFFF)
          const size_t len = static_cast<size_t>(s->n_pending);
          if (unicode::utf8_char_len(reinterpret_cast<const char *>(s->pending), len) == int(len)) {
            std::memcpy(out + n, s->pending, len);
            n += len;
          }
          s->n_pending = 0;
        }
        continue;
      }
      s->n_pending = s->need = 0;  // truncated sequence: drop it, then handle c afresh
    }
    if (c < 0x80) {
      out[n++] = static_cast<char>(c);
    } else if (c >= 0xC2 && c <= 0xF4) {
      s->pending[0] = c;
      s->n_pending = 1;
      s->need = c >= 0xF0 ? (ML_MUTANT("utf8_stream") ? 2 : 3) : c >= 0xE0 ? 2 : 1;  // mutant: emits 3 of 4 bytes
    }  // stray continuation or invalid lead byte: dropped
  }
  return n;
}

extern "C" const char *ml_build_isa(void) { return isa_row(kBuildIsa).name; }
extern "C" int ml_kernel_count(void) { return int(sizeof kKernelBindings / sizeof kKernelBindings[0]); }
extern "C" const char *ml_kernel_name(int i) {
  return i >= 0 && i < ml_kernel_count() ? kKernelBindings[i].kernel : nullptr;
}
extern "C" const char *ml_kernel_impl(int i) {
  return i >= 0 && i < ml_kernel_count() ? kKernelBindings[i].impl : nullptr;
}

extern "C" ml_status ml_open_sibling(ml_ctx **out, ml_ctx *base, const ml_options *opts) {
  clear_error();
  if (out == nullptr) return fail(ML_E_ARG, "ml_open_sibling: out is NULL");
  *out = nullptr;
  if (base == nullptr) return fail(ML_E_ARG, "ml_open_sibling: base is NULL");
  if (base->base) base = base->base;  // one family: every sibling uses the first context's pool
  ml_options o;
  ml_options_init(&o);
  if (opts) o = *opts;
  if (o.max_seq < 0) return fail(ML_E_ARG, "max_seq %d must be >= 0 (0 = the model's)", o.max_seq);
  if (o.batch < 0 || o.batch > 4096) return fail(ML_E_ARG, "batch %d is out of range [1, 4096] (0 = 64)", o.batch);
  ml_ctx *ctx = new (std::nothrow) ml_ctx();
  if (!ctx) return fail(ML_E_NOMEM, "cannot allocate the context");
  const Model &bm = base->model;
  const Config &c = bm.cfg;
  try {
    ctx->model.layers = bm.layers;  // tensor views into the base's mapping
  } catch (...) {
    delete ctx;
    return fail(ML_E_NOMEM, "cannot allocate the sibling's layer table");
  }
  ctx->model.file.view(bm.file.data(), bm.file.size());
  ctx->model.source_bytes = bm.source_bytes;
  ctx->model.gguf = bm.gguf;
  ctx->model.cfg = c;
  ctx->model.tok_emb = bm.tok_emb;
  ctx->model.final_norm = bm.final_norm;
  ctx->model.wcls = bm.wcls;
  ctx->base = base;
  if (const ml_status s = setup_state(ctx, o, base->pool.size())) {
    delete ctx;
    return s;
  }
  *out = ctx;
  return ML_OK;
}
