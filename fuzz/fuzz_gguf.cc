// Fuzz target: the GGUF reader (runtime/gguf.h) on arbitrary bytes: load_gguf (the container's
// validation, the metadata checked against the tensors, the conversion into one owned buffer, the
// tokenizer image of the metadata), then gguf_tokenizer_image (what ml_tokenize runs) on the same
// bytes.
//
// Properties: no crash, no read outside the input (ASan: the input is an exactly-sized copy); a
// rejection is ML_E_FORMAT or ML_E_SHAPE with one line naming the problem; an accepted model has
// every tensor view inside model.owned, 64-byte aligned, without overlap, with the bytes its type,
// layout and shape imply and the shapes the config gives; the tokenizer image built from metadata
// that was accepted loads (Tokenizer::load, with the vocabulary ml_open and ml_tokenize pass);
// gguf_tokenizer_image gives the same image; without an image, the reason is one line.
// The same bytes through GgufStream (the browser's conversion as a download arrives), in chunks of
// 1 to 4096 bytes each in an exactly-sized buffer of its own: accepted exactly when load_gguf
// accepts (the header asked for again, doubled, while begin() says it runs past what it was
// given), with the same converted bytes, config and tokenizer image (a classifier of the
// embedding's shape: load_gguf keeps it last in its buffer, the stream in its own; the stream may
// share one whose source differs but converts to the same bytes); a refusal is one line.
//
// Allocation bound (kOwnedPerByte): model.owned.n <= 48 x the input size. Each tensor is
// converted at most once (names are unique; a shared classifier is stored once). The worst
// expansion is a quantized matrix of one row padded to a 16-row panel, in the type that grows most
// in memory (docs/mlb-format.md): Q3_K's 110 bytes per 256 elements become 320 (256 int8 quants and
// two float32 scales per 32), 16 x 320 / 110 = 46.5x the tensor's bytes (Q5_1 16 x 40 / 24 = 26.7x,
// Q4_0 17.8x); F16 and BF16 widen 2x. The owned buffer adds at most 4 x 63 bytes of 64-byte
// alignment per tensor (q, d, d2 or m), paid for by the tensor's info in the header (at least 45
// bytes: name length, the shortest name 'output.weight', n_dims, one dimension, type, offset):
// 46.5 S + 252 <= 48 (S + 45) for every S. In sanitizer builds the
// target also records every allocation made while the reader runs (the allocator's hooks): none
// may be larger than kOwnedPerByte x size + kSlack (the owned buffer is the largest; the
// per-entry and per-token vectors are a few bytes per input byte: a metadata entry takes 13 bytes
// of the file and ~64 in kv_, a tensor info 29 and ~100, a string array item 8 and 16 as a view,
// a u8 array item read as integers 1 and 8), and all of them together (an upper bound of the
// peak) no more than kTotalPerByte x size + kSlack (the seeds and a fuzzed corpus of 3800 inputs
// stay under 10x).
#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "fuzz/fuzz_common.h"
#include "runtime/text/bpe_tokenizer.h"
#include "runtime/error.h"
#include "runtime/gguf.h"
#include "runtime/model.h"
#include "runtime/text/tokenizer.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ML_FUZZ_ALLOC_HOOKS 1
#endif
#endif
#if !defined(ML_FUZZ_ALLOC_HOOKS) && defined(__SANITIZE_ADDRESS__)
#define ML_FUZZ_ALLOC_HOOKS 1
#endif
#ifdef ML_FUZZ_ALLOC_HOOKS
#include <sanitizer/allocator_interface.h>
#endif

namespace {

// ML_FUZZ_SHOW=1: print each rejection's line (to check what a bad-* seed is refused for).
const bool g_show = std::getenv("ML_FUZZ_SHOW") != nullptr;

constexpr uint64_t kOwnedPerByte = 48;
constexpr uint64_t kTotalPerByte = 64;
constexpr uint64_t kSlack = 64 << 10;  // fixed-size tables (hash buckets, the byte table) and strings

// The largest single allocation while g_tracking (the reader runs on this thread only: pool nullptr).
volatile bool g_tracking = false;
volatile size_t g_largest = 0;
volatile uint64_t g_total = 0;  // every allocation's bytes added (an upper bound of the peak)

#ifdef ML_FUZZ_ALLOC_HOOKS
void on_malloc(const volatile void *, size_t n) {
  if (!g_tracking) return;
  if (n > g_largest) g_largest = n;
  g_total = g_total + n;
}
void on_free(const volatile void *) {}
const bool g_hooks_installed = __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free) != 0;
#else
const bool g_hooks_installed = false;
#endif

struct Span {
  const uint8_t *p;
  uint64_t n;
  const char *what;
};

void add_matrix(std::vector<Span> &spans, const ml_qtensor &w, int rows, int cols, const char *what) {
  ML_FUZZ_CHECK(w.rows == rows && w.cols == cols, what);
  if (w.type == ML_TYPE_F32) {
    ML_FUZZ_CHECK(w.layout == ML_LAYOUT_ROWS && w.d == nullptr && w.dh == nullptr && w.m == nullptr && w.d2 == nullptr, what);
    spans.push_back({static_cast<const uint8_t *>(w.q), ml::tensor_q_bytes(ML_TYPE_F32, uint64_t(rows), uint64_t(cols)), what});
    return;
  }
  ML_FUZZ_CHECK(w.type == ML_TYPE_Q8_0 || w.type == ML_TYPE_Q4_0, what);
  ML_FUZZ_CHECK(w.layout == ML_LAYOUT_PANEL16 && w.d != nullptr && w.dh == nullptr && cols % 32 == 0, what);
  const uint64_t padded = (uint64_t(rows) + 15) / 16 * 16;  // whole 16-row panels (docs/mlb-format.md)
  const ml_type t = ml_type(w.type);
  spans.push_back({static_cast<const uint8_t *>(w.q), ml::tensor_q_bytes(t, padded, uint64_t(cols)), what});
  const uint64_t d_bytes = ml::tensor_d_bytes(t, padded, uint64_t(cols), ML_LAYOUT_PANEL16);
  spans.push_back({reinterpret_cast<const uint8_t *>(w.d), d_bytes, what});
  // GGUF's other block types (kernels/kernels.h): a second scale per block (Q8 only) or offsets
  ML_FUZZ_CHECK(w.d2 == nullptr || w.type == ML_TYPE_Q8_0, what);
  if (w.d2) spans.push_back({reinterpret_cast<const uint8_t *>(w.d2), d_bytes, what});
  if (w.m) spans.push_back({reinterpret_cast<const uint8_t *>(w.m), d_bytes, what});
}

void add_vector(std::vector<Span> &spans, const float *v, int n, const char *what) {
  ML_FUZZ_CHECK(v != nullptr, what);
  spans.push_back({reinterpret_cast<const uint8_t *>(v), uint64_t(n) * 4, what});
}

void check_model(const ml::Model &m, uint64_t size) {
  const ml::Config &c = m.cfg;
  ML_FUZZ_CHECK(m.gguf, "a GGUF model says so");
  ML_FUZZ_CHECK(c.dim >= 2 && c.n_heads >= 1 && c.dim % c.n_heads == 0 && c.head_dim() % 2 == 0, "shape");
  ML_FUZZ_CHECK(c.n_kv_heads >= 1 && c.n_kv_heads <= c.n_heads && c.n_heads % c.n_kv_heads == 0, "gqa");
  ML_FUZZ_CHECK(c.n_layers >= 1 && static_cast<int>(m.layers.size()) == c.n_layers, "layer count");
  ML_FUZZ_CHECK(c.hidden_dim >= 1 && c.max_seq >= 1 && c.vocab >= 1, "sizes");
  ML_FUZZ_CHECK(c.n_tokens >= 1 && c.n_tokens <= c.vocab, "n_tokens");
  ML_FUZZ_CHECK(c.qkv_bias == (c.arch == 1), "q/k/v biases exactly for qwen2");
  ML_FUZZ_CHECK(c.rope_scaling == 0 ||
                    (c.rope_scaling == 1 && c.arch == 0 && c.rope_factor > 0 && c.rope_low_freq_factor > 0 &&
                     c.rope_low_freq_factor < c.rope_high_freq_factor && c.rope_original_max_seq >= 1),
                "rope scaling parameters");
  const int D = c.dim, KV = c.kv_dim(), H = c.hidden_dim, V = c.vocab;

  std::vector<Span> spans;
  add_matrix(spans, m.tok_emb, V, D, "tok_emb");
  bool any_q = m.tok_emb.type != ML_TYPE_F32;
  ml_type first_q = any_q ? ml_type(m.tok_emb.type) : ML_TYPE_F32;
  const auto note = [&](const ml_qtensor &w) {
    if (!any_q && w.type != ML_TYPE_F32) any_q = true, first_q = ml_type(w.type);
  };
  for (const ml::LayerWeights &w : m.layers) {
    add_vector(spans, w.attn_norm, D, "attn_norm");
    add_matrix(spans, w.wq, D, D, "wq");
    add_matrix(spans, w.wk, KV, D, "wk");
    add_matrix(spans, w.wv, KV, D, "wv");
    ML_FUZZ_CHECK(c.qkv_bias == (w.bq != nullptr) && c.qkv_bias == (w.bk != nullptr) && c.qkv_bias == (w.bv != nullptr),
                  "q/k/v biases exactly when qkv_bias");
    if (c.qkv_bias) {
      add_vector(spans, w.bq, D, "bq");
      add_vector(spans, w.bk, KV, "bk");
      add_vector(spans, w.bv, KV, "bv");
    }
    add_matrix(spans, w.wo, D, D, "wo");
    add_vector(spans, w.ffn_norm, D, "ffn_norm");
    add_matrix(spans, w.w1, H, D, "w1");
    add_matrix(spans, w.w2, D, H, "w2");
    add_matrix(spans, w.w3, H, D, "w3");
    for (const ml_qtensor *t : {&w.wq, &w.wk, &w.wv, &w.wo, &w.w1, &w.w2, &w.w3}) note(*t);
  }
  add_vector(spans, m.final_norm, D, "final_norm");
  if (c.shared_classifier) {
    ML_FUZZ_CHECK(m.wcls.q == m.tok_emb.q && m.wcls.d == m.tok_emb.d && m.wcls.type == m.tok_emb.type &&
                      m.wcls.layout == m.tok_emb.layout && m.wcls.rows == V && m.wcls.cols == D,
                  "shared classifier");
  } else {
    add_matrix(spans, m.wcls, V, D, "wcls");
    note(m.wcls);
  }
  // The model's weight type: the first quantized matrix's (load_gguf's order: tok_emb, the layers,
  // the classifier), its layout the panels.
  ML_FUZZ_CHECK(c.wtype == first_q, "weight type: the first quantized matrix's");
  ML_FUZZ_CHECK(c.layout == (any_q ? ML_LAYOUT_PANEL16 : ML_LAYOUT_ROWS), "layout");

  // Every view inside the owned buffer, 64-byte aligned, no two overlapping.
  const uint8_t *begin = m.owned.p, *end = m.owned.p + m.owned.n;
  ML_FUZZ_CHECK(begin != nullptr && m.owned.n > 0, "owned buffer");
  ML_FUZZ_CHECK(m.owned.n <= kOwnedPerByte * size, "owned buffer within 48x the input");
  std::vector<std::pair<const uint8_t *, const uint8_t *>> ranges;
  unsigned sum = 0;
  const uint8_t *cls = m.classifier.p, *cls_end = cls + m.classifier.n;  // a streamed classifier of its own
  for (const Span &sp : spans) {
    ML_FUZZ_CHECK(sp.n > 0 && ((sp.p >= begin && sp.p < end && sp.n <= uint64_t(end - sp.p)) ||
                               (cls && sp.p >= cls && sp.p < cls_end && sp.n <= uint64_t(cls_end - sp.p))),
                  sp.what);
    ML_FUZZ_CHECK(reinterpret_cast<uintptr_t>(sp.p) % 64 == 0, sp.what);
    sum += mlfuzz::touch(sp.p, sp.n);
    ranges.emplace_back(sp.p, sp.p + sp.n);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) ML_FUZZ_CHECK(ranges[i - 1].second <= ranges[i].first, "views overlap");
  ML_FUZZ_CHECK(sum != 0xFFFFFFFFu, "");  // keeps the reads
  ML_FUZZ_CHECK(!m.load_note.empty() && m.load_note.find('\n') == std::string::npos, m.load_note.c_str());
}

// A tokenizer image built by our own code from metadata that was accepted must load.
void check_image(const std::vector<uint8_t> &img, int vocab_mltk, int vocab_llama2) {
  ml::Tokenizer tok;
  const bool mltk = ml::BpeTokenizer::is_mltk(img.data(), img.size());
  ml::clear_error();
  const ml_status s = tok.load(img.data(), img.size(), mltk ? vocab_mltk : vocab_llama2, "fuzz.gguf (its tokenizer metadata)");
  if (s != ML_OK) mlfuzz::violated("the tokenizer image built from accepted metadata does not load:", ml_last_error());
}

void check_missing(const std::string &missing) {
  ML_FUZZ_CHECK(!missing.empty() && missing.find('\n') == std::string::npos, missing.c_str());
}

// The input streamed into a GgufStream (see the top); want: load_gguf's model when it accepted.
void check_stream(const uint8_t *data, size_t size, ml_status load_status, const ml::Model &want) {
  uint32_t rng = uint32_t(size) * 2654435761u + 1;
  const auto next_chunk = [&]() {
    rng = rng * 1103515245u + 12345u;
    return size_t(1 + (rng >> 8) % ((rng >> 28) < 4 ? 16 : 4096));
  };
  ml::GgufStream st;
  ml::clear_error();
  ml_status s = ML_E_FORMAT;
  bool more = true;
  for (size_t n = 64; more;) {
    n = std::min(n, size);
    const std::vector<uint8_t> head(data, data + n);
    s = st.begin(head.data(), n, size, "fuzz.gguf", &more);
    ML_FUZZ_CHECK(!more || (s != ML_OK && n < size), "begin() asks for more only when it had less than the file");
    if (!more) break;
    n *= 2;
  }
  for (size_t at = 0; s == ML_OK && at < size;) {
    const size_t n = std::min(next_chunk(), size - at);
    const std::vector<uint8_t> chunk(data + at, data + at + n);
    s = st.feed(chunk.data(), n);
    at += n;
  }
  ml::Model got;
  if (s == ML_OK) s = st.finish(&got);
  if (s != ML_OK) {
    if (g_show) std::fprintf(stderr, "GgufStream: %s\n", ml_last_error());
    mlfuzz::check_error_line(s);
    ML_FUZZ_CHECK(s == ML_E_FORMAT || s == ML_E_SHAPE, ml_last_error());
    ML_FUZZ_CHECK(load_status != ML_OK, "GgufStream refused what load_gguf accepts");
    return;
  }
  ML_FUZZ_CHECK(load_status == ML_OK, "GgufStream accepted what load_gguf refuses");
  check_model(got, size);
  const ml::Config &a = got.cfg, &b = want.cfg;
  ML_FUZZ_CHECK(a.dim == b.dim && a.n_layers == b.n_layers && a.vocab == b.vocab && a.n_tokens == b.n_tokens &&
                    a.max_seq == b.max_seq && a.wtype == b.wtype && a.rope_scaling == b.rope_scaling &&
                    a.rope_factor == b.rope_factor && a.norm_eps == b.norm_eps && a.rope_theta == b.rope_theta,
                "the streamed config is load_gguf's");
  ML_FUZZ_CHECK(got.tokenizer_image == want.tokenizer_image, "the streamed tokenizer image is load_gguf's");
  ML_FUZZ_CHECK(got.owned.n <= want.owned.n && std::memcmp(got.owned.p, want.owned.p, size_t(got.owned.n)) == 0,
                "the streamed weights are load_gguf's");
  if (got.classifier.p) {
    ML_FUZZ_CHECK(!a.shared_classifier && !b.shared_classifier && got.wcls.q == got.classifier.p, "a classifier of its own");
    const size_t at = size_t(static_cast<const uint8_t *>(want.wcls.q) - want.owned.p);
    ML_FUZZ_CHECK(at + got.classifier.n == want.owned.n &&
                      std::memcmp(got.classifier.p, want.owned.p + at, size_t(got.classifier.n)) == 0,
                  "the streamed classifier is load_gguf's");
  } else {
    ML_FUZZ_CHECK(got.owned.n == want.owned.n || (a.shared_classifier && !b.shared_classifier),
                  "the streamed buffer is load_gguf's whole");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlfuzz::AlignedCopy buf(data, size);
  ml::clear_error();
  ml_status s;
  {
    ml::Model m;
    g_largest = 0;
    g_total = 0;
    g_tracking = true;
    s = ml::load_gguf(&m, buf.data(), buf.size(), "fuzz.gguf", nullptr);
    g_tracking = false;
    if (g_show)
      std::fprintf(stderr, "allocations: largest %zu, total %llu, input %zu (%.1fx, %.1fx)\n", size_t(g_largest),
                   static_cast<unsigned long long>(g_total), size, double(g_largest) / double(size ? size : 1),
                   double(g_total) / double(size ? size : 1));
    ML_FUZZ_CHECK(!g_hooks_installed || g_largest <= kOwnedPerByte * size + kSlack, "an allocation larger than the input justifies");
    ML_FUZZ_CHECK(!g_hooks_installed || g_total <= kTotalPerByte * size + kSlack, "allocations larger than the input justifies");
    mlfuzz::g_accepted = s == ML_OK;
    if (s != ML_OK) {
      if (g_show) std::fprintf(stderr, "load_gguf: %s\n", ml_last_error());
      mlfuzz::check_error_line(s);
      ML_FUZZ_CHECK(s == ML_E_FORMAT || s == ML_E_SHAPE, ml_last_error());
    } else {
      check_model(m, size);
      if (!m.tokenizer_image.empty())
        check_image(m.tokenizer_image, m.cfg.vocab, m.cfg.n_tokens);
      else
        check_missing(m.tokenizer_missing);
    }
    check_stream(buf.data(), buf.size(), s, m);

    // ml_tokenize's path: the tokenizer alone, loaded with vocab 0.
    std::vector<uint8_t> image;
    std::string missing;
    ml::clear_error();
    g_largest = 0;
    g_total = 0;
    g_tracking = true;
    const ml_status t = ml::gguf_tokenizer_image(buf.data(), buf.size(), "fuzz.gguf", &image, &missing);
    g_tracking = false;
    ML_FUZZ_CHECK(!g_hooks_installed || g_largest <= kOwnedPerByte * size + kSlack, "an allocation larger than the input justifies");
    ML_FUZZ_CHECK(!g_hooks_installed || g_total <= kTotalPerByte * size + kSlack, "allocations larger than the input justifies");
    if (t != ML_OK) {
      if (g_show) std::fprintf(stderr, "gguf_tokenizer_image: %s\n", ml_last_error());
      mlfuzz::check_error_line(t);
      ML_FUZZ_CHECK(t == ML_E_FORMAT || t == ML_E_SHAPE, ml_last_error());
      ML_FUZZ_CHECK(s != ML_OK, "load_gguf accepted what gguf_tokenizer_image refuses");
    } else {
      if (s == ML_OK) ML_FUZZ_CHECK(image == m.tokenizer_image, "gguf_tokenizer_image differs from load_gguf's image");
      if (!image.empty())
        check_image(image, 0, 0);
      else
        check_missing(missing);
    }
  }
  return 0;
}
