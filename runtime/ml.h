/* legacy-ml public C API.
 *
 * One opaque context holds a mapped model (.mlb, docs/mlb-format.md), its tokenizer (llama2.c
 * tokenizer.bin or byte-level BPE `MLTK`, docs/tokenizer-format.md), the KV cache and every runtime buffer (one arena, allocated at open: evaluating
 * and sampling allocate nothing; only ml_encode keeps a scratch list that grows with the longest
 * prompt it has seen), a thread pool and a sampler. Every function returns an ml_status;
 * on failure ml_last_error() gives one line naming what was wrong (a field, a file, an argument).
 * No function aborts, exits or throws.
 *
 *   ml_ctx *ctx; ml_options o; ml_options_init(&o);
 *   if (ml_open(&ctx, "model.mlb", "tokenizer.bin", &o) != ML_OK) puts(ml_last_error());
 *   ml_encode(ctx, "Once upon a time", 1, toks, cap, &n);
 *   for (pos...) { ml_eval(ctx, tok, pos, &logits); ml_sample(ctx, logits, &next); ... }
 *   ml_close(ctx);
 */
#ifndef LEGACY_ML_H
#define LEGACY_ML_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ml_status {
  ML_OK = 0,
  ML_E_IO = 1,     /* a file could not be opened, read, mapped or written */
  ML_E_FORMAT = 2, /* a file's bytes are not what its format says */
  ML_E_SHAPE = 3,  /* dimensions are inconsistent or unsupported */
  ML_E_NOMEM = 4,  /* an allocation failed */
  ML_E_ISA = 5,    /* this build needs CPU features this machine lacks */
  ML_E_ARG = 6     /* a caller's argument is out of range or misused */
} ml_status;

const char *ml_status_name(ml_status s); /* "ML_E_FORMAT" */
const char *ml_last_error(void);         /* last failure on this thread; "" if none */

typedef struct ml_ctx ml_ctx;

typedef struct ml_options {
  int n_threads; /* 0 = one per online CPU */
  int max_seq;   /* 0 = the model's; else a shorter context (smaller KV cache) */
  int reference; /* 1 = run the scalar reference kernels instead of the build's */
  int batch;     /* most tokens one ml_eval_batch call takes (prompt prefill); 0 = 64 */
  int kv_type;   /* KV cache elements: ML_KV_F32 (0, the default and the reference), ML_KV_F16
                  * (half the cache bytes; rounded to nearest-even on store, converted exactly on
                  * load) or ML_KV_Q8_0 (about 0.28 of the F32 bytes: each head row quantized in
                  * blocks of 32 like an activation, padded to a whole block; scores are integer
                  * dot products with the query head quantized the same way). Each gives the same
                  * logits on every build and thread count, not those of F32. */
  const char *cache_dir; /* GGUF models: keep the converted weights in this folder (created when its
                  * parent exists) and map them on the next open instead of converting; NULL (the
                  * default) = no cache. runtime/gguf.h says what the key is. */
  int map_weights; /* 1 = read the weights of a .mlb (or of a GGUF's cache) through the file's mapping:
                  * shared with other processes, paged in and out by the system; 0 (the default) =
                  * copied into memory with 2 MiB pages where the system has them (Linux with
                  * transparent huge pages on), the file is at least 32 MiB and at most half the
                  * available memory, else mapped. Decoding streams every weight each token, and
                  * through 4 KiB pages it ran up to a quarter slower (docs/bench.md, "Weights in huge pages"). */
} ml_options;

typedef enum ml_kv_type { ML_KV_F32 = 0, ML_KV_F16 = 1, ML_KV_Q8_0 = 2 } ml_kv_type;
/* "f32" / "f16" / "q8_0" -> type; ML_E_ARG naming the choices otherwise. */
ml_status ml_kv_type_parse(const char *name, int *type);
const char *ml_kv_type_name(int type); /* "f32", "f16", "q8_0"; "unknown" otherwise */

void ml_options_init(ml_options *o);

typedef struct ml_model_info {
  int dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab, max_seq;
  float rope_theta, norm_eps;
  int wtype;              /* 0 F32, 8 Q8_0, 2 Q4_0 */
  int shared_classifier;
  int n_threads;
  int batch;              /* tokens per ml_eval_batch call at most */
  int layout;             /* weight layout: 0 rows, 1 16-row panels, 2 16-row panels with binary16
                             scales (docs/mlb-format.md) */
  const char *isa;        /* the build's ISA, e.g. "avx2" */
  const char *kernels;    /* "build" or "scalar reference" */
  uint64_t file_bytes;    /* size of the .mlb */
  uint64_t weight_bytes;  /* weight bytes one decode step reads */
  uint64_t arena_bytes;   /* runtime memory: KV cache, activations, tables */
  const char *arch;       /* the model's architecture: "llama", "qwen2" (.mlb version 2) or "qwen3" (3) */
  int n_tokens;           /* tokens the tokenizer has: vocab, or fewer (Qwen2.5: 151665 < 151936) */
  int kv_type;            /* the context's KV cache type (ml_kv_type) */
  const char *format;     /* the model file's format: "mlb" or "gguf" */
  const char *load_note;  /* GGUF: one line saying what the load converted and how long it took; .mlb:
                             that its weights were copied into huge pages (ml_options.map_weights), or "" */
  int head_dim;           /* elements per attention head: dim / n_heads, or the model's own (Qwen3) */
} ml_model_info;

/* Opens MODEL (.mlb, or a GGUF file: runtime/gguf.h; its weights converted at open, split across
 * the n_threads) and, if tokenizer_path is not NULL, its tokenizer: a llama2.c tokenizer.bin
 * must have exactly the model's n_tokens entries (its vocab unless the .mlb header says fewer), a
 * byte-level MLTK file at most the model's vocab (docs/tokenizer-format.md). With tokenizer_path
 * NULL a GGUF's own tokenizer (its tokenizer.ggml.* metadata) is used when it has one the runtime
 * reads; ml_get_tokenizer_info then says why not otherwise. opts may be NULL (defaults). */
ml_status ml_open(ml_ctx **out, const char *model_path, const char *tokenizer_path,
                  const ml_options *opts);
/* ml_open over a model file already in memory (a browser's download, wasm/loader.js): `name` is
 * for messages (NULL: "model in memory"). data must be 64-byte aligned. A .mlb is validated as
 * ml_open validates a file and its weights are used in place, not copied: data must stay valid and
 * unchanged until ml_close. A GGUF is converted at open (as ml_open does; no cache_dir) and data
 * is not read after this returns. */
ml_status ml_open_memory(ml_ctx **out, const void *data, uint64_t size, const char *name,
                         const char *tokenizer_path, const ml_options *opts);
void ml_close(ml_ctx *ctx); /* NULL is fine */
ml_status ml_get_info(const ml_ctx *ctx, ml_model_info *info);

/* Encoding flags of ml_encode_ex. */
#define ML_ENCODE_BOS 1     /* BOS first: llama2.c always (id 1); byte-level when the file's add_bos is set */
#define ML_ENCODE_SPECIAL 2 /* byte-level: split special tokens (<|im_start|>, ...) out of the text;
                             * leave it off for untrusted text. Added (non-special) tokens are always
                             * split out. llama2.c tokenizers have no special tokens: ignored. */

/* Encodes NUL-terminated UTF-8 text (invalid UTF-8 is ML_E_ARG).
 *  llama2.c tokenizer.bin: as llama2.c's encoder: BOS (1) with ML_ENCODE_BOS, a dummy-prefix space
 *    when text is not empty, then BPE merges by score, unknown characters as <0xXX> byte tokens.
 *  byte-level (MLTK): added/special tokens split out, the text between them normalized (NFC)
 *    when the tokenizer declares it, the family's pre-tokenizer, BPE by merge rank, bos_id first
 *    with ML_ENCODE_BOS when add_bos.
 * tokens has room for max_tokens ids; ml_encode_bound(ctx, strlen(text)) entries always suffice.
 * A buffer too small is ML_E_ARG with *n_tokens set to a size that suffices (tokens may then be
 * partly written); tokens = NULL with max_tokens = 0 asks for that size. */
ml_status ml_encode_ex(ml_ctx *ctx, const char *text, int flags, int *tokens, int max_tokens, int *n_tokens);

/* ml_encode_ex with ML_ENCODE_SPECIAL, plus ML_ENCODE_BOS when add_bos is not 0. */
ml_status ml_encode(ml_ctx *ctx, const char *text, int add_bos, int *tokens, int max_tokens,
                    int *n_tokens);

/* Token entries that always suffice for a text of text_bytes bytes: text_bytes + 2 (llama2.c);
 * byte-level: text_bytes + 1, or 3 * text_bytes + 1 when the tokenizer normalizes to NFC (which
 * lengthens UTF-8 at most threefold). 0 when ctx has no tokenizer. */
size_t ml_encode_bound(const ml_ctx *ctx, size_t text_bytes);

/* The text of `token` following `prev`. NULL for an id outside the model's vocabulary [0, vocab).
 *  llama2.c: its decode (the leading space is dropped after BOS, <0xXX> becomes that byte).
 *  byte-level: the token's bytes (prev is unused); ids past the tokenizer (n_tokens <= id < vocab)
 *    and absent ids decode to empty text "". A piece may hold part of a UTF-8 character: stream
 *    pieces through ml_text_stream_feed. A token whose bytes contain NUL ends there.
 * The pointer stays valid until ml_close. */
const char *ml_decode(const ml_ctx *ctx, int prev, int token);

/* Facts of the context's tokenizer, e.g. for chat and generation loops. */
typedef struct ml_tokenizer_info {
  int kind;           /* 0 llama2.c tokenizer.bin, 1 byte-level BPE (MLTK) */
  int n_tokens;       /* ids the tokenizer defines; [n_tokens, model vocab) decode to "" */
  int bos_id;         /* -1 if none; llama2.c: 1 */
  int eos_id;         /* -1 if none; llama2.c: 2 */
  int eot_id;         /* end of turn (<|im_end|>, <|eot_id|>); -1 if none (always, llama2.c) */
  int pad_id;         /* -1 if none */
  int add_bos;        /* 1 when ML_ENCODE_BOS puts bos_id first */
  int n_stop;         /* ids that end generation besides BOS: byte-level: eos_id, eot_id and the */
  const int *stop_ids;/*   file's stop list, each once; llama2.c: none (run.c stops at BOS only) */
  int pretokenizer;   /* byte-level: 0 gpt2, 1 llama3, 2 qwen2, 3 smollm; llama2.c: -1 */
  int normalizer;     /* 0 none, 1 NFC */
  const char *chat_template;   /* the model's chat template (Jinja source), NUL-terminated; "" if none */
  size_t chat_template_bytes;  /* its length (it may hold NUL bytes) */
} ml_tokenizer_info;
/* Fills *info (pointers valid until ml_close); ML_E_ARG when ctx has no tokenizer. */
ml_status ml_get_tokenizer_info(const ml_ctx *ctx, ml_tokenizer_info *info);

/* Chat prompt formats (no Jinja engine: known templates are recognised by their markers; the
 * renderer reproduces the real templates byte for byte, runtime/text/chat.h). Thread safety: these
 * functions only read ctx (ml_chat_stop_ids fills its list once, safely from several threads). */
typedef enum ml_chat_format {
  ML_CHAT_UNKNOWN = 0,
  ML_CHAT_CHATML = 1, /* Qwen2.5, SmolLM2-Instruct: <|im_start|>role\n...<|im_end|>\n */
  ML_CHAT_ZEPHYR = 2, /* TinyLlama-Chat: <|user|>\n...</s>\n */
  ML_CHAT_LLAMA2 = 3, /* Llama 2 chat: <s>[INST] <<SYS>>\n...\n<</SYS>>\n\n... [/INST] ... </s> */
  ML_CHAT_LLAMA3 = 4, /* Llama 3 Instruct: <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|> */
  ML_CHAT_QWEN3 = 5   /* Qwen3: ChatML turns; <think>...</think> reasoning kept only after the last user query */
} ml_chat_format;
/* add_assistant flags of ml_chat_render (0 = neither). */
#define ML_CHAT_ASSISTANT 1   /* end with the assistant header (add_generation_prompt) */
#define ML_CHAT_NO_THINKING 2 /* with ML_CHAT_ASSISTANT: the template's enable_thinking = false (Qwen3:
                               * an empty "<think>\n\n</think>\n\n" after the header, so the model
                               * answers without reasoning); formats without the switch ignore it */
typedef struct ml_chat_message {
  const char *role;    /* "system" | "user" | "assistant" */
  const char *content; /* UTF-8, NUL-terminated */
} ml_chat_message;
/* The format of the context's tokenizer's chat template; ML_E_FORMAT with a message naming
 * --chat-template chatml|zephyr|llama2|llama3|qwen3 when it is unknown or absent (llama2.c tokenizer.bin
 * files carry no template); ML_E_ARG without a tokenizer. */
ml_status ml_chat_detect(const ml_ctx *ctx, ml_chat_format *format);
/* "chatml", "zephyr", "llama2", "llama3", "qwen3" -> format; ML_E_ARG naming the choices otherwise. */
ml_status ml_chat_parse_name(const char *name, ml_chat_format *format);
/* "chatml", ...; "unknown" for ML_CHAT_UNKNOWN and values outside the enum. */
const char *ml_chat_format_name(ml_chat_format f);
/* Renders messages[0..n) (n >= 1) as the template does (Hugging Face's apply_chat_template with
 * add_generation_prompt = add_assistant & ML_CHAT_ASSISTANT, enable_thinking = false when
 * add_assistant & ML_CHAT_NO_THINKING as well; 1 is ML_CHAT_ASSISTANT), with bos_token/eos_token the tokenizer's BOS/EOS texts
 * ("<s>"/"</s>" for a llama2.c tokenizer.bin). Per format:
 *  chatml: a system message first as given; otherwise the default system prompt the context's
 *    template writes (Qwen2.5's "You are Qwen, ..."), none without one; no BOS in the text.
 *  zephyr: no BOS in the text; llama2: "<s>" before every [INST] (user and assistant roles must
 *    alternate, starting with user, after an optional system message; add_assistant changes
 *    nothing: the text already ends with " [/INST]"); llama3: "<|begin_of_text|>" first, and the
 *    assistant header also when add_assistant is 0 if the context's template writes it always;
 *    Llama 3.1+ templates ("Cutting Knowledge Date") open with their dated system block (3.2+:
 *    today's UTC date, as strftime_now gives it to transformers).
 *  qwen3: ChatML turns, no default system prompt; an assistant message's "<think>...</think>"
 *    reasoning is dropped unless the message comes after the last user query (a user message
 *    that is not a "<tool_response>...</tool_response>"), where it is written as
 *    "<think>\nREASONING\n</think>\n\n" before the answer (an empty block for the last message);
 *    ML_CHAT_NO_THINKING: see above (only when the context's template has enable_thinking).
 * Writes at most cap bytes including the NUL into out; *len = bytes needed excluding the NUL
 * (out = NULL, cap = 0 asks the size; a cap too small is ML_E_ARG with *len set). An invalid role,
 * NULL or invalid UTF-8 content, a conversation the template refuses, or format UNKNOWN: ML_E_ARG.
 * The text holds special-token markers: encode it with ml_chat_encode (byte-level: the same as
 * ml_encode_ex with ML_ENCODE_SPECIAL and no ML_ENCODE_BOS, i.e. exactly what apply_chat_template
 * tokenizes: BOS only where the template text writes it). */
ml_status ml_chat_render(const ml_ctx *ctx, ml_chat_format format, const ml_chat_message *messages, int n,
                         int add_assistant, char *out, size_t cap, size_t *len);
/* Encodes rendered chat text. Byte-level (MLTK): ml_encode_ex(ML_ENCODE_SPECIAL), no BOS added.
 * llama2.c tokenizer.bin: "<s>" and "</s>" become ids 1 and 2, each piece of text between them is
 * encoded as ml_encode does (llama2.c's dummy-prefix space, as llama.cpp's SentencePiece tokenizer
 * after a special token), and BOS (1) goes first unless the text starts with "<s>" (llama.cpp's
 * add_bos). Buffer rules as ml_encode_ex (ml_encode_bound(ctx, strlen(text)) entries always suffice). */
ml_status ml_chat_encode(ml_ctx *ctx, const char *text, int *tokens, int max_tokens, int *n_tokens);
/* End-of-turn token ids of this format with this tokenizer (chatml <|im_end|>, zephyr and llama2
 * EOS </s>, llama3 <|eot_id|>), then the tokenizer's stop ids (ml_tokenizer_info.stop_ids), each
 * once. ML_E_FORMAT naming the token when the tokenizer lacks one the format needs (chatml on a
 * tokenizer without <|im_start|>/<|im_end|>, ...). qwen3: as chatml. *ids valid until ml_close. */
ml_status ml_chat_stop_ids(const ml_ctx *ctx, ml_chat_format format, const int **ids, int *n);

/* Runs the model on `token` at position `pos` (0 <= pos <= number of positions evaluated so far,
 * so a caller may rewind) and points *logits at vocab floats, valid until the next eval. */
ml_status ml_eval(ml_ctx *ctx, int token, int pos, const float **logits);

/* Runs n tokens at positions pos .. pos+n-1 at once (prompt prefill: each block of weights is read
 * once for several tokens). 1 <= n <= the batch size of ml_options; pos as for ml_eval. With
 * all_logits, *logits points at n rows of vocab floats (row t: the logits after token t), else at
 * the last token's. Every value is bit-identical to feeding the tokens one by one with ml_eval. */
ml_status ml_eval_batch(ml_ctx *ctx, const int *tokens, int n, int pos, int all_logits, const float **logits);

/* Decodes one token for each of n distinct contexts of one family (ml_open_sibling) in one forward
 * pass: tokens[i] at position pos[i] of ctxs[i]'s KV cache (pos[i] as for ml_eval on ctxs[i]). The
 * matrix products take the n tokens as one batch (each block of weights read once for all of
 * them); RoPE, the cache and attention are each context's own. logits[i] points at ctxs[i]'s vocab
 * floats (valid until its next eval), bit-identical to ml_eval(ctxs[i], tokens[i], pos[i]). The
 * contexts share one kv_type and kernels (reference); ctxs[0]'s buffers are the pass's scratch:
 * n <= its batch and every pos[i] < its context length. Concurrency: an evaluation of the family. */
ml_status ml_eval_family(ml_ctx *const *ctxs, const int *tokens, const int *pos, int n, const float **logits);

/* Sampling as llama2.c: temperature 0 = greedy (first maximum); otherwise softmax(logits/T) and,
 * when 0 < topp < 1, nucleus sampling; xorshift RNG from seed. The logits are not modified. */
ml_status ml_sampler_set(ml_ctx *ctx, float temperature, float topp, uint64_t seed);
ml_status ml_sample(ml_ctx *ctx, const float *logits, int *token);

/* The sampler chain (runtime/sampler.h states the order of its stages and their definitions):
 * opt-in; with every field at its neutral value (ml_sampling_default) the draws are ml_sample's. */
typedef struct ml_sampling {
  float temperature;        /* 0 = greedy (default 1) */
  float top_p;              /* (0, 1]; 1 = off (default 0.9, as ml_run) */
  uint64_t seed;            /* xorshift seed, > 0 (0 = 1) */
  int top_k;                /* keep the k most likely; 0 = off */
  float min_p;              /* [0, 1): drop p < min_p * max p; 0 = off */
  float repeat_penalty;     /* > 0; 1 = off */
  int repeat_last_n;        /* history the penalties look at; -1 = all (default 64) */
  float presence_penalty;   /* subtracted once from every token seen; 0 = off */
  float frequency_penalty;  /* subtracted per occurrence; 0 = off */
  int n_logit_bias;         /* entries of the two arrays below (copied by ml_sampler_configure) */
  const int *logit_bias_ids;
  const float *logit_bias;  /* added to the logit; -INFINITY bans the token */
} ml_sampling;
void ml_sampling_default(ml_sampling *s);
ml_status ml_sampler_configure(ml_ctx *ctx, const ml_sampling *s);
/* One draw of the chain; history: the tokens so far (prompt and generated), oldest first. */
ml_status ml_sample_chain(ml_ctx *ctx, const float *logits, const int *history, int n_history, int *token);
/* Log-probabilities: log-softmax at temperature 1 of the logits after logit_bias and the penalties
 * (what the chain's cut-offs saw), for `token` (*chosen) and the n_top most likely (top, descending). */
typedef struct ml_logprob {
  int token;
  float logprob;
} ml_logprob;
ml_status ml_logprobs(ml_ctx *ctx, const float *logits, const int *history, int n_history, int token, int n_top,
                      ml_logprob *top, float *chosen);

/* Text streaming for decoded pieces: holds the bytes of a UTF-8 character split across tokens
 * until it is complete, drops control bytes (as llama2.c's safe_printf) and invalid sequences
 * (stray or missing continuation bytes, overlong forms, surrogates, past U+10FFFF): what it writes
 * is always valid UTF-8.
 * out needs room for strlen(piece) + 4 bytes; returns the number of bytes written (no NUL). */
typedef struct ml_text_stream {
  unsigned char pending[4];
  int n_pending, need;
} ml_text_stream;
size_t ml_text_stream_feed(ml_text_stream *s, const char *piece, char *out);

/* Generation sessions (runtime/session.cc states the contract): the one generation loop. A session
 * owns its context's KV cache and history, uses its sampler (a sibling decodes with its base's
 * tokenizer) and gives valid UTF-8 text. Options are copied; `size` versions them (fields only
 * ever appended). Pointers it returns stay valid until the next call on it.
 *   ml_session_new(ctx, &opts, &s); ml_session_set_prompt(s, ids, n, &reused);
 *   do ml_session_next(s, &token, &text, &finish); while (finish == ML_FINISH_NONE); */
typedef struct ml_session ml_session;
typedef enum ml_finish {
  ML_FINISH_NONE, ML_FINISH_STOP_ID, ML_FINISH_STOP_STRING, /* none yet; a stop id (no text); a stop string (text ends before it) */
  ML_FINISH_LENGTH, ML_FINISH_CONTEXT,                      /* max_tokens generated; no position left to feed the token */
  ML_FINISH_COMPLETE                                        /* the constraint's text is complete, nothing may follow */
} ml_finish;
/* A constraint on the generated text (structured/ml_structured.h makes JSON-schema ones): before
 * each choice mask(user, allowed, vocab) sets allowed[id] = 1 for the tokens that may come next
 * (allowed is zeroed first); the chosen token goes to accept(user, token); state(user) is 0 while
 * the text is unfinished, 1 when it is complete but may go on (stop ids are allowed only then), 2
 * when it is complete and nothing may follow (the generation ends: ML_FINISH_COMPLETE). */
typedef struct ml_constraint {
  void *user;
  void (*mask)(void *user, unsigned char *allowed, int vocab);
  void (*accept)(void *user, int token);
  int (*state)(void *user);
} ml_constraint;
typedef struct ml_session_options {
  size_t size;                     /* sizeof(ml_session_options): set by ml_session_options_init */
  float temperature, top_p;        /* as ml_sampler_set; defaults 0 (greedy) and 0.9 */
  uint64_t seed;                   /* default 1 */
  int max_tokens;                  /* non-stop tokens per prompt at most; 0 (default) = the context's */
  int n_stop_ids;                  /* ids that end the generation (BOS, EOS, end of turn, ...) */
  const int *stop_ids;
  int n_stop_strings;              /* texts that end it; text that may still begin one is held back */
  const char *const *stop_strings; /* (NULL and "" entries ignored) */
  const ml_sampling *sampling;     /* the sampler chain (copied); NULL: temperature, top_p, seed above */
  int logprobs;                    /* 1: each token's log-probability (ml_session_logprobs); 0: none */
  int top_logprobs;                /* with logprobs: also the 0..20 most likely tokens */
  const ml_constraint *constraint; /* NULL: none (its user pointer must outlive the generation) */
} ml_session_options;
void ml_session_options_init(ml_session_options *o);
/* A session on ctx (free it first) with o (NULL: defaults); set_options: new ones, sampler reseeded. */
ml_status ml_session_new(ml_ctx *ctx, const ml_session_options *o, ml_session **out);
ml_status ml_session_set_options(ml_session *s, const ml_session_options *o);
void ml_session_free(ml_session *s); /* NULL is fine */
/* Leading tokens of tokens[0..n) the KV cache holds already. */
int ml_session_common_prefix(const ml_session *s, const int *tokens, int n);
/* tokens[0..n) (1 <= n <= the context) become the history, keeping the common prefix in the KV cache
 * but at most n - 1 tokens (the last's logits start the generation): *n_reused (may be NULL).
 * Evaluates nothing; a new generation (stream, held text, count) starts; the RNG goes on. */
ml_status ml_session_set_prompt(ml_session *s, const int *tokens, int n, int *n_reused);
/* Evaluates the next batch (at most the context's batch size) of history tokens not in the KV
 * cache: *n_evaluated (0: none left); *logits (if logits is not NULL): their rows with all_logits,
 * else the last one's. */
ml_status ml_session_prefill(ml_session *s, int all_logits, int *n_evaluated, const float **logits);
/* One token: evaluates what the KV cache lacks, samples; gives the token, the text it releases
 * ("" while held back; a finish releases all) and *finish (ml_finish). After a finish: ML_E_ARG
 * until the next ml_session_set_prompt. */
ml_status ml_session_next(ml_session *s, int *token, const char **text, int *finish);
/* ml_session_next for n sessions of one family (ml_server's slots): the tokens their KV caches
 * lack (each at most one: a session still reading its prompt is ML_E_ARG; prefill it first) go
 * through one ml_eval_family, then each session chooses its token; tokens[i], texts[i] and
 * finishes[i] are what ml_session_next gives session i, with the same bits as calling it alone. */
ml_status ml_session_next_batch(ml_session *const *ss, int n, int *tokens, const char **texts, int *finishes);
/* The text of token after prev through the session's stream (ml_run's prompt echo); evaluates nothing. */
ml_status ml_session_echo(ml_session *s, int prev, int token, const char **text);
const int *ml_session_tokens(const ml_session *s, int *n); /* the history (the last may not be in the KV cache) */
int ml_session_n_past(const ml_session *s);          /* history tokens in the KV cache */
int ml_session_n_generated(const ml_session *s);     /* non-stop tokens since the prompt */
const float *ml_session_logits(const ml_session *s); /* the logits sampled or prefilled last; NULL before */
/* With options.logprobs, after ml_session_next: the token's log-probability (ml_logprobs: after
 * logit_bias and penalties, at temperature 1) and top_logprobs entries, valid until the next call. */
ml_status ml_session_logprobs(const ml_session *s, float *chosen, const ml_logprob **top, int *n_top);

/* Build facts for --version: the ISA, and for every kernel of the ABI its implementation. */
const char *ml_build_isa(void);
int ml_kernel_count(void);
const char *ml_kernel_name(int i);
const char *ml_kernel_impl(int i);
const char *ml_hwy_target(void); /* Highway's static target name in this build, e.g. "AVX2" */

/* Opens a sibling of `base`: a context with its own KV cache, activations and sampler (its own
 * arena, sized by opts' max_seq and batch; opts = NULL: the model's context, batch 64)
 * that shares base's mapped model weights (nothing is copied) and base's thread pool (opts'
 * n_threads is ignored; reference picks the kernels as for ml_open). base may itself be a sibling:
 * the new context then belongs to the same family. A sibling has no tokenizer of its own:
 * encode, decode and render chats with the base context (ml_encode on a sibling is ML_E_ARG).
 * Concurrency within a family (base and its siblings): evaluation (ml_eval, ml_eval_batch) on
 * any two of them must not overlap, since they share the pool — drive them from one thread or
 * serialize; ml_sample and ml_sampler_set touch only their own context; ml_encode on the base
 * may run alongside evaluation (not alongside another ml_encode on the base); ml_decode,
 * ml_get_info and ml_get_tokenizer_info only read. Close every sibling before its base. */
ml_status ml_open_sibling(ml_ctx **out, ml_ctx *base, const ml_options *opts);

#ifdef __cplusplus
}
#endif
#endif
