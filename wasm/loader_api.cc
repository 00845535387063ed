// The C side of the browser's model loader (wasm/loader.js, linked into ml_web by cmake/wasm.cmake):
// the loader streams a download straight into one buffer in wasm memory and opens the model there
// (ml_open_memory: a .mlb's weights used in place, one copy; a GGUF converted, then its buffer freed).
//   mlw_model_alloc(size)            a 64-byte-aligned buffer for the file (NULL when memory is out)
//   mlw_model_free(p)                gives it back (after ml_close for a .mlb; after open for a GGUF)
//   mlw_open_memory(out, p, size, name, tokenizer_path, opts)   ml_open_memory with a 32-bit size
//                                     (wasm32: no model buffer is 4 GB), so JavaScript needs no BigInt;
//                                     n_threads 0 = mlw_threads(), more than that is ML_E_ARG (the
//                                     pool's Workers exist from the module's start: no more can join)
//   mlw_plan_mlb(header, n, max_seq)  bytes the context will need besides the file for a .mlb whose
//                                     first n >= 256 bytes are given: the F32 KV cache for max_seq
//                                     positions (0 = the model's); -1 when the header is not valid
//   mlw_gguf_begin(head, n, size, name, *more)   a GGUF converted as it streams in (ml::GgufStream):
//                                     the file's first n bytes of `size`; the stream, or NULL with
//                                     ml_last_error() and *more = 1 when the header runs past n bytes
//                                     (call again with more), 0 when the file is refused
//   mlw_gguf_weight_bytes(s), mlw_gguf_kv_bytes(s, max_seq)   what the model will hold (after begin)
//   mlw_gguf_feed(s, p, n)            the file's next n bytes (the first call: from byte 0): ml_status
//   mlw_gguf_open(out, s, name, tokenizer_path, opts)   every byte fed: a context takes the model
//                                     (mlw_open_memory's thread rule)
//   mlw_gguf_free(s)                  the stream (after open, or to give up)
//   mlw_threads()                     the threads a context gets by default: 1 without pthreads,
//                                     else the browser's cores, at most 16
//   mlw_max_threads()                 the most a context may ask for: 1 + the Workers started with
//                                     the module (one per core, at least 4, at most 16)
#include <emscripten/emscripten.h>
#if !defined(ML_NO_THREADS)
#include <emscripten/threading.h>
#endif

#include <cstdint>
#include <cstdlib>
#include <new>

#include "runtime/error.h"
#include "runtime/gguf.h"
#include "runtime/ml.h"
#include "runtime/model.h"

namespace {
int cores() {
#if defined(ML_NO_THREADS)
  return 1;
#else
  const int n = emscripten_num_logical_cores();
  return n < 1 ? 1 : n > 16 ? 16 : n;
#endif
}
}

extern "C" {

EMSCRIPTEN_KEEPALIVE int mlw_threads(void) { return cores(); }

// PTHREAD_POOL_SIZE of ml_web_simd128_threads (cmake/wasm.cmake), plus the calling thread.
EMSCRIPTEN_KEEPALIVE int mlw_max_threads(void) {
#if defined(ML_NO_THREADS)
  return 1;
#else
  return (cores() < 4 ? 4 : cores()) + 1;
#endif
}

EMSCRIPTEN_KEEPALIVE void *mlw_model_alloc(size_t size) {
  if (size == 0 || size > SIZE_MAX - 63) return nullptr;
  return std::aligned_alloc(64, (size + 63) / 64 * 64);
}

EMSCRIPTEN_KEEPALIVE void mlw_model_free(void *p) { std::free(p); }

// The options with n_threads 0 resolved; ML_E_ARG past what the module's Workers allow.
static ml_status thread_options(ml_ctx **out, const ml_options *opts, ml_options *o) {
  ml_options_init(o);
  if (opts) *o = *opts;
  if (o->n_threads == 0) o->n_threads = mlw_threads();
  if (o->n_threads <= mlw_max_threads()) return ML_OK;
  if (out) *out = nullptr;
  return ml::fail(ML_E_ARG, "%d threads asked for; this module runs at most %d (%s)", o->n_threads, mlw_max_threads(),
                  mlw_max_threads() == 1 ? "the single-thread build" : "its Workers and the caller");
}

EMSCRIPTEN_KEEPALIVE ml_status mlw_open_memory(ml_ctx **out, const void *data, size_t size, const char *name,
                                               const char *tokenizer_path, const ml_options *opts) {
  ml_options o;
  if (const ml_status s = thread_options(out, opts, &o)) return s;
  return ml_open_memory(out, data, size, name, tokenizer_path, &o);
}

// The F32 KV cache for max_seq positions (0 = the model's).
static double kv_bytes(const ml::Config &c, int max_seq) {
  const int seq = max_seq > 0 && max_seq < c.max_seq ? max_seq : c.max_seq;
  return 2.0 * c.n_layers * seq * c.kv_dim() * sizeof(float);
}

EMSCRIPTEN_KEEPALIVE double mlw_plan_mlb(const uint8_t *header, size_t n, int max_seq) {
  ml::Config c;
  if (ml::parse_header(header, n, &c) != ML_OK) return -1;
  return kv_bytes(c, max_seq);
}

EMSCRIPTEN_KEEPALIVE ml::GgufStream *mlw_gguf_begin(const uint8_t *head, size_t n, double size, const char *name, int *more) {
  ml::clear_error();
  ml::GgufStream *s = new (std::nothrow) ml::GgufStream();
  bool short_header = false;
  const ml_status st = !s ? ml::fail(ML_E_NOMEM, "cannot allocate the GGUF stream")
                          : s->begin(head, n, uint64_t(size), name, &short_header);
  if (more) *more = short_header ? 1 : 0;
  if (st == ML_OK) return s;
  delete s;
  return nullptr;
}

EMSCRIPTEN_KEEPALIVE double mlw_gguf_weight_bytes(const ml::GgufStream *s) { return double(s->weight_bytes()); }

EMSCRIPTEN_KEEPALIVE double mlw_gguf_kv_bytes(const ml::GgufStream *s, int max_seq) {
  return s->config() ? kv_bytes(*s->config(), max_seq) : -1;
}

EMSCRIPTEN_KEEPALIVE ml_status mlw_gguf_feed(ml::GgufStream *s, const uint8_t *p, size_t n) {
  ml::clear_error();
  return s->feed(p, n);
}

EMSCRIPTEN_KEEPALIVE ml_status mlw_gguf_open(ml_ctx **out, ml::GgufStream *s, const char *name, const char *tokenizer_path,
                                             const ml_options *opts) {
  ml_options o;
  if (const ml_status st = thread_options(out, opts, &o)) return st;
  return ml::ml_open_streamed(out, s, name, tokenizer_path, &o);
}

EMSCRIPTEN_KEEPALIVE void mlw_gguf_free(ml::GgufStream *s) { delete s; }

}  // extern "C"
