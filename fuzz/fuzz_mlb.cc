// Fuzz target: the .mlb loader (runtime/model.cc: parse_header + the tensor walk), on arbitrary
// bytes, through load_model_from_memory, the same validation ml_open runs on a mapped file.
//
// Properties: no crash, no read outside the input (ASan: the input is an exactly-sized copy);
// a rejection is ML_E_FORMAT or ML_E_SHAPE with one line naming the problem; an accepted model
// has every array inside the input, 64-byte aligned, in file order without overlap, with the
// byte count its shape and type imply, and the last array ends exactly at the end of the input.
#include <vector>

#include "fuzz/fuzz_common.h"
#include "runtime/error.h"
#include "runtime/model.h"

namespace {

struct Span {
  const uint8_t *p;
  uint64_t n;
};

// Layouts 1 and 2 (docs/mlb-format.md) store quantized matrices as whole 16-row panels; layout 2's
// scales are binary16 (dh, half the bytes).
void add_tensor(std::vector<Span> &spans, const ml_qtensor &w, int rows, int cols, ml_type t, uint32_t layout) {
  const uint32_t want_layout = t == ML_TYPE_F32 ? 0u : layout;
  ML_FUZZ_CHECK(w.rows == rows && w.cols == cols && w.type == t && w.layout == want_layout, "tensor shape");
  const uint64_t stored = want_layout != 0 ? (uint64_t(rows) + 15) / 16 * 16 : uint64_t(rows);
  spans.push_back({static_cast<const uint8_t *>(w.q), ml::tensor_q_bytes(t, stored, uint64_t(cols))});
  if (t == ML_TYPE_F32) {
    ML_FUZZ_CHECK(w.d == nullptr && w.dh == nullptr, "F32 tensor with scales");
  } else if (want_layout == 2) {
    ML_FUZZ_CHECK(w.d == nullptr && w.dh != nullptr, "layout 2 tensor without binary16 scales");
    spans.push_back({reinterpret_cast<const uint8_t *>(w.dh), ml::tensor_d_bytes(t, stored, uint64_t(cols), 2)});
  } else {
    ML_FUZZ_CHECK(w.dh == nullptr, "float32 scales and binary16 ones");
    spans.push_back({reinterpret_cast<const uint8_t *>(w.d), ml::tensor_d_bytes(t, stored, uint64_t(cols), want_layout)});
  }
}

void add_vector(std::vector<Span> &spans, const float *v, int n) {
  spans.push_back({reinterpret_cast<const uint8_t *>(v), uint64_t(n) * 4});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlfuzz::AlignedCopy buf(data, size);
  ml::clear_error();
  ml::Model m;
  const ml_status s = ml::load_model_from_memory(&m, buf.data(), buf.size());
  mlfuzz::g_accepted = s == ML_OK;
  if (s != ML_OK) {
    mlfuzz::check_error_line(s);
    ML_FUZZ_CHECK(s == ML_E_FORMAT || s == ML_E_SHAPE, ml_last_error());
    return 0;
  }

  const ml::Config &c = m.cfg;
  ML_FUZZ_CHECK(c.dim >= 2 && c.n_heads >= 1 && c.dim % c.n_heads == 0 && c.head_dim() % 2 == 0, "shape");
  ML_FUZZ_CHECK(c.n_kv_heads >= 1 && c.n_heads % c.n_kv_heads == 0, "gqa");
  ML_FUZZ_CHECK(static_cast<int>(m.layers.size()) == c.n_layers, "layer count");
  const ml_type t = c.wtype;
  const uint32_t lay = c.layout;
  ML_FUZZ_CHECK(lay == 0 || ((lay == 1 || lay == 2) && t != ML_TYPE_F32), "layout");
  ML_FUZZ_CHECK(c.version >= 1 && c.version <= 3, "version");
  ML_FUZZ_CHECK(c.version >= 2 || (c.arch == 0 && !c.qkv_bias && c.rope_scaling == 0 && c.n_tokens == c.vocab),
                "version 1 has no version-2 features");
  ML_FUZZ_CHECK(c.version == 3 || (c.head_size == 0 && !c.qk_norm && c.arch <= 1), "only version 3 has version-3 features");
  ML_FUZZ_CHECK(c.head_dim() >= 2 && c.head_dim() % 2 == 0, "head size");
  ML_FUZZ_CHECK(c.n_tokens >= 1 && c.n_tokens <= c.vocab, "n_tokens");
  ML_FUZZ_CHECK(c.rope_scaling == 0 ||
                    (c.rope_scaling == 1 && c.rope_factor > 0 && c.rope_low_freq_factor > 0 &&
                     c.rope_low_freq_factor < c.rope_high_freq_factor && c.rope_original_max_seq >= 1),
                "rope scaling parameters");
  const int D = c.dim, Q = c.q_dim(), KV = c.kv_dim(), H = c.hidden_dim, V = c.vocab, HD = c.head_dim();
  std::vector<Span> spans;
  add_tensor(spans, m.tok_emb, V, D, t, lay);
  for (const ml::LayerWeights &w : m.layers) {
    add_vector(spans, w.attn_norm, D);
    add_tensor(spans, w.wq, Q, D, t, lay);
    add_tensor(spans, w.wk, KV, D, t, lay);
    add_tensor(spans, w.wv, KV, D, t, lay);
    ML_FUZZ_CHECK(c.qkv_bias == (w.bq != nullptr) && c.qkv_bias == (w.bk != nullptr) &&
                      c.qkv_bias == (w.bv != nullptr), "q/k/v biases exactly when qkv_bias");
    if (c.qkv_bias) {  // .mlb version 2: bq, bk, bv after wv
      add_vector(spans, w.bq, Q);
      add_vector(spans, w.bk, KV);
      add_vector(spans, w.bv, KV);
    }
    ML_FUZZ_CHECK(c.qk_norm == (w.q_norm != nullptr) && c.qk_norm == (w.k_norm != nullptr), "q/k norms exactly when qk_norm");
    if (c.qk_norm) {  // .mlb version 3: q_norm, k_norm (head_dim each) after the biases
      add_vector(spans, w.q_norm, HD);
      add_vector(spans, w.k_norm, HD);
    }
    add_tensor(spans, w.wo, D, Q, t, lay);
    add_vector(spans, w.ffn_norm, D);
    add_tensor(spans, w.w1, H, D, t, lay);
    add_tensor(spans, w.w2, D, H, t, lay);
    add_tensor(spans, w.w3, H, D, t, lay);
  }
  add_vector(spans, m.final_norm, D);
  if (c.shared_classifier) {
    ML_FUZZ_CHECK(m.wcls.q == m.tok_emb.q && m.wcls.d == m.tok_emb.d, "shared classifier");
  } else {
    add_tensor(spans, m.wcls, V, D, t, lay);
  }

  const uint8_t *begin = buf.data(), *end = buf.data() + buf.size();
  const uint8_t *prev_end = begin + ml::kHeaderBytes;
  unsigned sum = 0;
  for (const Span &sp : spans) {
    ML_FUZZ_CHECK(sp.p >= prev_end && sp.p - prev_end < 64, "arrays in order, 64-byte aligned gaps");
    ML_FUZZ_CHECK(reinterpret_cast<uintptr_t>(sp.p) % 64 == 0, "array alignment");
    ML_FUZZ_CHECK(sp.n <= uint64_t(end - sp.p), "array inside the file");
    sum += mlfuzz::touch(sp.p, sp.n);
    prev_end = sp.p + sp.n;
  }
  ML_FUZZ_CHECK(prev_end == end, "the last array ends the file");
  // Every weight once, plus one embedding row (counted again when the classifier is shared).
  ML_FUZZ_CHECK(m.weight_bytes_per_token() <= 2 * uint64_t(buf.size()), "weight bytes per token");
  return static_cast<int>(sum & 0);
}
