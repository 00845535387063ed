// .mlb loading and validation. Every field is checked before use and every array against the file
// length in 64-bit arithmetic; failures name the field or tensor (docs/mlb-format.md).
#include "runtime/model.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <utility>

#include <sys/stat.h>

#include "kernels/mutants.h"
#include "runtime/base.h"
#include "runtime/error.h"
#include "runtime/gguf.h"
#include "runtime/threads.h"

namespace ml {

namespace {

// Generous upper bounds so every size below fits comfortably in 64 bits (and dims in int).
constexpr uint32_t kMaxDim = 1u << 20, kMaxLayers = 1u << 12, kMaxVocab = 1u << 24,
                   kMaxSeq = 1u << 22;

ml_status check_range(const char *field, uint32_t v, uint32_t lo, uint32_t hi) {
  if (v < lo || v > hi)
    return fail(ML_E_FORMAT, "header field %s = %u is out of range [%u, %u]", field, v, lo, hi);
  return ML_OK;
}

bool is_quantized(ml_type t) { return t == ML_TYPE_Q8_0 || t == ML_TYPE_Q4_0; }

constexpr uint64_t kV2HeaderEnd = 88;  // version 2 fields are bytes 56..87; the rest is reserved
constexpr uint64_t kV3HeaderEnd = 96;  // version 3 adds bytes 88..95

// Version 2's fields (docs/mlb-format.md): architecture, q/k/v biases, RoPE scaling, tokenizer size.
ml_status parse_v2_fields(const uint8_t *p, Config *c) {
  c->arch = rd_u32(p + 56);
  if (c->arch > 2)
    return fail(ML_E_FORMAT, "header field arch = %u is not an architecture (0 = llama, 1 = qwen2, 2 = qwen3)", c->arch);
  if (c->arch == 2 && c->version < 3)
    return fail(ML_E_FORMAT, "header field arch = 2 (qwen3) needs .mlb version 3, the file says %u", c->version);
  const uint32_t bias = rd_u32(p + 60);
  if (bias > 1) return fail(ML_E_FORMAT, "header field qkv_bias = %u must be 0 or 1", bias);
  c->qkv_bias = bias == 1;
  c->rope_scaling = rd_u32(p + 64);
  c->rope_factor = rd_f32(p + 68);
  c->rope_low_freq_factor = rd_f32(p + 72);
  c->rope_high_freq_factor = rd_f32(p + 76);
  c->rope_original_max_seq = rd_u32(p + 80);
  if (c->rope_scaling == 0) {
    for (int off = 68; off < 84; ++off)
      if (p[off] != 0)
        return fail(ML_E_FORMAT, "header field %s is not zero but rope_scaling = 0 (none)",
                    off < 72 ? "rope_factor" : off < 76 ? "rope_low_freq_factor" : off < 80 ? "rope_high_freq_factor"
                                                                                      : "rope_original_max_seq");
  } else if (c->rope_scaling == 1) {
    const struct { const char *name; float v; } f[] = {{"rope_factor", c->rope_factor},
                                                      {"rope_low_freq_factor", c->rope_low_freq_factor},
                                                      {"rope_high_freq_factor", c->rope_high_freq_factor}};
    for (const auto &x : f)
      if (!(std::isfinite(x.v) && x.v > 0))
        return fail(ML_E_FORMAT, "header field %s = %g must be finite and > 0 (rope_scaling = 1, llama3)", x.name,
                    double(x.v));
    if (!(c->rope_low_freq_factor < c->rope_high_freq_factor))
      return fail(ML_E_FORMAT, "header field rope_low_freq_factor = %g must be < rope_high_freq_factor = %g",
                  double(c->rope_low_freq_factor), double(c->rope_high_freq_factor));
    if (const ml_status s = check_range("rope_original_max_seq", c->rope_original_max_seq, 1, kMaxSeq)) return s;
  } else {
    return fail(ML_E_FORMAT, "header field rope_scaling = %u is not a RoPE scaling (0 = none, 1 = llama3)",
                c->rope_scaling);
  }
  const uint32_t n_tokens = rd_u32(p + 84);
  if (n_tokens > uint32_t(c->vocab))
    return fail(ML_E_FORMAT, "header field n_tokens = %u is larger than vocab = %d", n_tokens, c->vocab);
  c->n_tokens = n_tokens == 0 ? c->vocab : static_cast<int>(n_tokens);
  return ML_OK;
}

// Version 3's fields (docs/mlb-format.md): an explicit head size and Qwen3's per-head q/k RMSNorm.
ml_status parse_v3_fields(const uint8_t *p, Config *c) {
  const uint32_t head_size = rd_u32(p + 88);
  if (head_size != 0)
    if (const ml_status s = check_range("head_size", head_size, 2, kMaxDim)) return s;
  c->head_size = static_cast<int>(head_size);
  const uint32_t qk_norm = rd_u32(p + 92);
  if (qk_norm > 1) return fail(ML_E_FORMAT, "header field qk_norm = %u must be 0 or 1", qk_norm);
  c->qk_norm = qk_norm == 1;
  return ML_OK;
}

// Walks the tensor arrays in file order, handing out aligned views.
class Cursor {
 public:
  Cursor(const uint8_t *base, uint64_t size, uint32_t layout)
      : base_(base), size_(size), off_(kHeaderBytes), layout_(layout) {}

  ml_status array(const char *tensor, int layer, const char *part, uint64_t bytes, const void **out) {
    off_ = (off_ + kAlign - 1) & ~(kAlign - 1);
    if (off_ > size_ || bytes > size_ - off_) {
      const std::string where = layer >= 0 ? std::string(tensor) + " (layer " + std::to_string(layer) + ")" : tensor;
      return fail(ML_E_FORMAT,
                  "tensor %s: %s array [%llu, %llu) runs past the end of the file (%llu bytes)", where.c_str(),
                  part, static_cast<unsigned long long>(off_),
                  static_cast<unsigned long long>(off_ + bytes), static_cast<unsigned long long>(size_));
    }
    const uint8_t *p = base_ + off_;
    if (reinterpret_cast<uintptr_t>(p) % kAlign != 0)
      return fail(ML_E_FORMAT, "tensor %s: %s array is not 64-byte aligned in memory", tensor, part);
    *out = p;
    off_ += bytes;
    return ML_OK;
  }

  ml_status matrix(const char *name, int layer, ml_type t, int rows, int cols, ml_qtensor *out) {
    out->rows = rows;
    out->cols = cols;
    out->type = static_cast<uint8_t>(t);
    out->layout = static_cast<uint8_t>(t == ML_TYPE_F32 ? uint32_t(ML_LAYOUT_ROWS) : layout_);
    out->dh = nullptr;
    out->d = out->m = out->d2 = nullptr;
    // Layouts 1 and 2 store whole panels: rows rounded up to a multiple of 16 (padding rows are zero).
    const uint64_t stored = out->layout != ML_LAYOUT_ROWS ? (uint64_t(rows) + 15) / 16 * 16 : uint64_t(rows);
    ml_status s = array(name, layer, t == ML_TYPE_F32 ? "data" : "q", tensor_q_bytes(t, stored, cols), &out->q);
    if (s != ML_OK || t == ML_TYPE_F32) return s;
    const void *d = nullptr;
    s = array(name, layer, "d", tensor_d_bytes(t, stored, cols, out->layout), &d);
    if (out->layout == ML_LAYOUT_PANEL16_F16)  // binary16 scales
      out->dh = static_cast<const uint16_t *>(d);
    else
      out->d = static_cast<const float *>(d);
    return s;
  }

  ml_status vector(const char *name, int layer, int n, const float **out) {
    const void *p = nullptr;
    const ml_status s = array(name, layer, "data", uint64_t(n) * 4, &p);
    *out = static_cast<const float *>(p);
    return s;
  }

  uint64_t end() const { return off_; }

 private:
  const uint8_t *base_;
  uint64_t size_, off_;
  uint32_t layout_;
};

}  // namespace

const char *arch_name(uint32_t arch) {
  return arch == 2 ? "qwen3" : arch == 1 ? "qwen2" : arch == 0 ? "llama" : "?";
}

const char *type_name(ml_type t) {
  switch (t) {
    case ML_TYPE_F32: return "F32";
    case ML_TYPE_Q8_0: return "Q8_0";
    case ML_TYPE_Q4_0: return "Q4_0";
  }
  return "?";
}

uint64_t tensor_q_bytes(ml_type t, uint64_t rows, uint64_t cols) {
  switch (t) {
    case ML_TYPE_F32: return rows * cols * 4;
    case ML_TYPE_Q8_0: return rows * cols;
    case ML_TYPE_Q4_0: return rows * cols / 2;
  }
  return 0;
}

uint64_t tensor_d_bytes(ml_type t, uint64_t rows, uint64_t cols, uint32_t layout) {
  return t == ML_TYPE_F32 ? 0 : rows * (cols / ML_QK) * (layout == ML_LAYOUT_PANEL16_F16 ? 2 : 4);
}

ml_status parse_header(const uint8_t *p, uint64_t n, Config *c) {
  if (n < kHeaderBytes)
    return fail(ML_E_FORMAT, "file is %llu bytes, shorter than the 256-byte .mlb header",
                static_cast<unsigned long long>(n));
  if (std::memcmp(p, "MLB1", 4) != 0) {
    char m[20];
    for (int i = 0; i < 4; ++i) std::snprintf(m + 4 * i, 5, "\\x%02x", p[i]);
    return fail(ML_E_FORMAT, "bad magic %s (expected \"MLB1\"): not a .mlb model file", m);
  }
  const uint32_t version = rd_u32(p + 4);
  if (version < 1 || version > kMlbVersion)
    return fail(ML_E_FORMAT, "header field version = %u, this build reads versions 1 to %u", version, kMlbVersion);
  c->version = version;

  struct Field { const char *name; uint32_t lo, hi; int *dst; };
  const Field fields[] = {
      {"dim", 2, kMaxDim, &c->dim},           {"n_layers", 1, kMaxLayers, &c->n_layers},
      {"n_heads", 1, kMaxDim, &c->n_heads},   {"n_kv_heads", 1, kMaxDim, &c->n_kv_heads},
      {"hidden_dim", 1, kMaxDim, &c->hidden_dim}, {"vocab", 1, kMaxVocab, &c->vocab},
      {"max_seq", 1, kMaxSeq, &c->max_seq},
  };
  for (int i = 0; i < 7; ++i) {
    const uint32_t v = rd_u32(p + 8 + 4 * i);
    if (const ml_status s = check_range(fields[i].name, v, fields[i].lo, fields[i].hi)) return s;
    *fields[i].dst = static_cast<int>(v);
  }
  c->rope_theta = rd_f32(p + 36);
  c->norm_eps = rd_f32(p + 40);
  if (!(std::isfinite(c->rope_theta) && c->rope_theta > 0))
    return fail(ML_E_FORMAT, "header field rope_theta = %g must be finite and > 0", double(c->rope_theta));
  if (!(std::isfinite(c->norm_eps) && c->norm_eps > 0))
    return fail(ML_E_FORMAT, "header field norm_eps = %g must be finite and > 0", double(c->norm_eps));
  c->n_tokens = c->vocab;
  const uint32_t wtype = rd_u32(p + 44);
  if (wtype != ML_TYPE_F32 && wtype != ML_TYPE_Q8_0 && wtype != ML_TYPE_Q4_0)
    return fail(ML_E_FORMAT, "header field wtype = %u is not a weight type (0 = F32, 8 = Q8_0, 2 = Q4_0)", wtype);
  c->wtype = static_cast<ml_type>(wtype);
  const uint32_t shared = rd_u32(p + 48);
  if (shared > 1) return fail(ML_E_FORMAT, "header field shared_classifier = %u must be 0 or 1", shared);
  c->shared_classifier = shared == 1;
  c->layout = rd_u32(p + 52);
  if (c->layout > ML_LAYOUT_PANEL16_F16)
    return fail(ML_E_FORMAT,
                "header field layout = %u is not a layout this build reads (0 = rows, 1 = 16-row panels, 2 = 16-row "
                "panels with binary16 scales)",
                c->layout);
  if (c->layout != ML_LAYOUT_ROWS && c->wtype == ML_TYPE_F32)
    return fail(ML_E_FORMAT, "header field layout = %u (16-row panels) needs a quantized wtype, not F32", c->layout);
  c->head_size = 0;
  c->qk_norm = false;
  if (version >= 2)
    if (const ml_status s = parse_v2_fields(p, c)) return s;
  if (version >= 3)
    if (const ml_status s = parse_v3_fields(p, c)) return s;
  for (uint64_t i = version >= 3 ? kV3HeaderEnd : version >= 2 ? kV2HeaderEnd : 56; i < kHeaderBytes; ++i)
    if (p[i] != 0)
      return fail(ML_E_FORMAT, "reserved header byte %llu is %u, must be 0", static_cast<unsigned long long>(i), p[i]);

  // Shapes.
  if (c->head_size == 0) {
    if (c->dim % c->n_heads != 0)
      return fail(ML_E_SHAPE, "dim = %d is not a multiple of n_heads = %d", c->dim, c->n_heads);
    if (c->head_dim() % 2 != 0)
      return fail(ML_E_SHAPE, "head_dim = dim / n_heads = %d must be even (RoPE rotates pairs)", c->head_dim());
  } else {
    if (c->head_size % 2 != 0)
      return fail(ML_E_SHAPE, "header field head_size = %d must be even (RoPE rotates pairs)", c->head_size);
    if (uint64_t(c->head_size) * uint64_t(c->n_heads) > kMaxDim)
      return fail(ML_E_SHAPE, "n_heads · head_size = %d · %d is larger than %u", c->n_heads, c->head_size, kMaxDim);
  }
  if (c->n_kv_heads > c->n_heads || c->n_heads % c->n_kv_heads != 0)
    return fail(ML_E_SHAPE, "n_heads = %d is not a multiple of n_kv_heads = %d", c->n_heads, c->n_kv_heads);
  if (is_quantized(c->wtype)) {
    if (c->dim % ML_QK != 0)
      return fail(ML_E_SHAPE, "tensor wq: K = dim = %d is not a multiple of 32, which %s needs", c->dim,
                  type_name(c->wtype));
    if (c->hidden_dim % ML_QK != 0)
      return fail(ML_E_SHAPE, "tensor w2: K = hidden_dim = %d is not a multiple of 32, which %s needs",
                  c->hidden_dim, type_name(c->wtype));
    if (c->q_dim() % ML_QK != 0)
      return fail(ML_E_SHAPE, "tensor wo: K = n_heads · head_size = %d is not a multiple of 32, which %s needs",
                  c->q_dim(), type_name(c->wtype));
  }
  return ML_OK;
}

namespace {

// OUT.mlb for the convert.py command: the input's name without its extension (or a folder's
// trailing slashes), .mlb appended.
std::string mlb_name_for(const char *path) {
  std::string s(path);
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  const size_t slash = s.find_last_of('/'), dot = s.find_last_of('.');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash + 1)) s.erase(dot);
  return s + ".mlb";
}

// The size in bytes of a llama2.c legacy checkpoint (run.c's read_checkpoint: a 7-int32 header,
// float32 weights, the freq_cis tables, a classifier when vocab_size < 0) with this header; 0 when
// the header is not plausible.
uint64_t llama2c_checkpoint_bytes(const uint8_t *p) {
  int32_t h[7];
  std::memcpy(h, p, sizeof h);
  const int64_t dim = h[0], hidden = h[1], layers = h[2], heads = h[3], kv_heads = h[4], seq = h[6];
  const int64_t vocab = h[5] < 0 ? -int64_t(h[5]) : h[5];
  if (dim < 2 || dim > (1 << 16) || hidden < 1 || hidden > (1 << 18) || layers < 1 || layers > 1024 || heads < 1 ||
      heads > dim || kv_heads < 1 || kv_heads > heads || vocab < 1 || vocab > (1 << 22) || seq < 1 || seq > (1 << 22) ||
      dim % heads != 0)
    return 0;
  const int64_t head = dim / heads, kv_dim = dim * kv_heads / heads;
  const int64_t floats = vocab * dim + layers * (2 * dim + dim * dim * 2 + dim * kv_dim * 2 + 3 * dim * hidden) + dim +
                         seq * head + (h[5] < 0 ? vocab * dim : 0);
  return 28 + uint64_t(floats) * 4;
}

bool file_exists(const std::string &p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

// A model in a format tools/convert.py reads (GGUF, llama2.c checkpoint, Hugging Face folder):
// ML_E_FORMAT naming the command that makes an .mlb of it; ML_OK when it is none of them.
ml_status foreign_model(const char *path, const uint8_t *p, uint64_t n) {
  const std::string out = mlb_name_for(path);
  if (p == nullptr) {  // a directory
    const std::string dir(path);
    if (file_exists(dir + "/config.json") || file_exists(dir + "/model.safetensors") ||
        file_exists(dir + "/model.safetensors.index.json"))
      return fail(ML_E_FORMAT, "model %s is a Hugging Face folder, not a .mlb file; make one with: "
                  "python3 tools/convert.py %s %s --wtype q8_0", path, path, out.c_str());
    return ML_OK;
  }
  if (n >= 28 && llama2c_checkpoint_bytes(p) == n)
    return fail(ML_E_FORMAT, "model %s is a llama2.c checkpoint, not a .mlb file; make one with: "
                "python3 tools/convert.py %s %s --wtype q8_0", path, path, out.c_str());
  return ML_OK;
}

// The file starts with GGUF's magic (false when it cannot be read: open() then says why).
bool starts_with_gguf(const char *path) {
  if (!path || !path[0]) return false;
  std::FILE *f = fopen_utf8(path, "rb");
  if (!f) return false;
  uint8_t magic[4] = {};
  const bool yes = std::fread(magic, 1, 4, f) == 4 && is_gguf(magic, 4);
  std::fclose(f);
  return yes;
}

// Header, then every tensor array against the length of m->file (docs/mlb-format.md); a file that
// is no .mlb but a format convert.py reads is named with the command (foreign_model).
ml_status validate_model(Model *m, const char *path) {
  const uint8_t *base = m->file.data();
  const uint64_t size = m->file.size();
  if (size < 4 || std::memcmp(base, "MLB1", 4) != 0)
    if (const ml_status s = foreign_model(path, base, size)) return s;
  Config &c = m->cfg;
  if (const ml_status s = parse_header(base, size, &c)) return s;

  Cursor cur(base, size, c.layout);
  const ml_type t = c.wtype;
  const int D = c.dim, Q = c.q_dim(), KV = c.kv_dim(), H = c.hidden_dim, HD = c.head_dim();
  if (const ml_status s = cur.matrix("tok_emb", -1, t, c.vocab, D, &m->tok_emb)) return s;
  m->layers.resize(static_cast<size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) {
    LayerWeights &w = m->layers[static_cast<size_t>(l)];
    ml_status s;
    if ((s = cur.vector("attn_norm", l, D, &w.attn_norm)) || (s = cur.matrix("wq", l, t, Q, D, &w.wq)) ||
        (s = cur.matrix("wk", l, t, KV, D, &w.wk)) || (s = cur.matrix("wv", l, t, KV, D, &w.wv)))
      return s;
    w.bq = w.bk = w.bv = nullptr;
    if (c.qkv_bias && ((s = cur.vector("bq", l, Q, &w.bq)) || (s = cur.vector("bk", l, KV, &w.bk)) ||
                       (s = cur.vector("bv", l, KV, &w.bv))))
      return s;
    w.q_norm = w.k_norm = nullptr;
    if (c.qk_norm && ((s = cur.vector("q_norm", l, HD, &w.q_norm)) || (s = cur.vector("k_norm", l, HD, &w.k_norm))))
      return s;
    if ((s = cur.matrix("wo", l, t, D, Q, &w.wo)) || (s = cur.vector("ffn_norm", l, D, &w.ffn_norm)) ||
        (s = cur.matrix("w1", l, t, H, D, &w.w1)) || (s = cur.matrix("w2", l, t, D, H, &w.w2)) ||
        (s = cur.matrix("w3", l, t, H, D, &w.w3)))
      return s;
  }
  if (const ml_status s = cur.vector("final_norm", -1, D, &m->final_norm)) return s;
  if (c.shared_classifier) {
    m->wcls = m->tok_emb;
    if (ML_MUTANT("shared_cls"))  // mutant: the classifier taken from the wrong tensor (rows capped to stay in it)
      m->wcls = m->layers.back().w1, m->wcls.rows = c.vocab < c.hidden_dim ? c.vocab : c.hidden_dim;
  } else if (const ml_status s = cur.matrix("wcls", -1, t, c.vocab, D, &m->wcls)) {
    return s;
  }
  if (cur.end() != size)
    return fail(ML_E_FORMAT, "file is %llu bytes but its tensors end at byte %llu (%llu trailing bytes)",
                static_cast<unsigned long long>(size), static_cast<unsigned long long>(cur.end()),
                static_cast<unsigned long long>(size - cur.end()));
  return ML_OK;
}

}  // namespace

bool huge_pages_help(uint64_t bytes, const char *thp_enabled, uint64_t mem_available) {
  const bool thp = thp_enabled && (std::strstr(thp_enabled, "[always]") || std::strstr(thp_enabled, "[madvise]"));
  return thp && bytes >= kLargeBytes && bytes <= mem_available / 2;
}

bool copy_to_huge_pages(FileMap *file, OwnedBytes *owned, ThreadPool *pool) {
#if defined(__linux__)
  if (!file->mapped()) return false;
  char thp[128] = "";
  if (std::FILE *f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r")) {
    if (!std::fgets(thp, sizeof thp, f)) thp[0] = '\0';
    std::fclose(f);
  }
  unsigned long long avail_kb = 0;
  if (std::FILE *f = std::fopen("/proc/meminfo", "r")) {
    char line[128];
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "MemAvailable: %llu kB", &avail_kb) == 1) break;
    std::fclose(f);
  }
  const uint64_t n = file->size();
  if (!huge_pages_help(n, thp, uint64_t(avail_kb) * 1024) || !owned->allocate(n)) return false;
  const uint8_t *from = file->data();
  const auto copy = [&](int tid, int nth) {  // each thread its part: the page faults side by side
    const uint64_t a = n * uint64_t(tid) / uint64_t(nth), b = n * uint64_t(tid + 1) / uint64_t(nth);
    std::memcpy(owned->p + a, from + a, size_t(b - a));
  };
  if (pool)
    pool->run(copy);
  else
    copy(0, 1);
  file->close();
  file->view(owned->p, n);
  return true;
#else
  (void)file, (void)owned, (void)pool;
  return false;
#endif
}

ml_status load_model(Model *m, const char *path, ThreadPool *pool, const char *gguf_cache_dir, bool map_weights) {
  struct stat st;
  if (path && path[0] && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
    if (const ml_status s = foreign_model(path, nullptr, 0)) return s;
  if (starts_with_gguf(path)) {  // converted (or mapped from the cache) into m->file; the GGUF is let go
    FileMap src;
    if (const ml_status s = src.open(path, "model")) return s;
    m->source_bytes = src.size();
    return load_gguf(m, src.data(), src.size(), path, pool, gguf_cache_dir, map_weights);
  }
  if (const ml_status s = m->file.open(path, "model")) return s;
  m->source_bytes = m->file.size();
  const auto t0 = std::chrono::steady_clock::now();
  if (!map_weights && copy_to_huge_pages(&m->file, &m->owned, pool)) {
    char note[128];
    std::snprintf(note, sizeof note, "weights copied into huge pages (%.1f MiB in %.0f ms)",
                  double(m->owned.n) / (1 << 20),
                  std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    m->load_note = note;
  }
  return validate_model(m, path);
}

ml_status load_model_from_memory(Model *m, const uint8_t *data, uint64_t size, const char *name, ThreadPool *pool) {
  m->source_bytes = size;
  if (is_gguf(data, size)) return load_gguf(m, data, size, name, pool, nullptr);  // converted into m->owned
  m->file.view(data, size);
  return validate_model(m, name);
}

void Model::take(Model *from) {
  std::swap(owned.p, from->owned.p);
  std::swap(owned.n, from->owned.n);
  std::swap(classifier.p, from->classifier.p);
  std::swap(classifier.n, from->classifier.n);
  file.view(owned.p, owned.n);
  gguf = from->gguf;
  source_bytes = from->source_bytes;
  load_note = std::move(from->load_note);
  tokenizer_image = std::move(from->tokenizer_image);
  tokenizer_missing = std::move(from->tokenizer_missing);
  cfg = from->cfg;
  tok_emb = from->tok_emb;
  layers = std::move(from->layers);
  final_norm = from->final_norm;
  wcls = from->wcls;
}

OwnedBytes::~OwnedBytes() { ml_aligned_free(p); }

bool OwnedBytes::allocate(uint64_t bytes) {
  ml_aligned_free(p);
  p = nullptr;
  n = 0;
  if (bytes == 0 || bytes > uint64_t(SIZE_MAX)) return bytes == 0;
  p = static_cast<uint8_t *>(ml_alloc_large(size_t(bytes)));
  if (!p) return false;
  n = bytes;
  return true;
}

uint64_t tensor_bytes(const ml_qtensor &w) {
  const ml_type t = static_cast<ml_type>(w.type);
  const uint64_t d = tensor_d_bytes(t, uint64_t(w.rows), uint64_t(w.cols), w.layout);
  return tensor_q_bytes(t, uint64_t(w.rows), uint64_t(w.cols)) + d * (1 + (w.m ? 1 : 0) + (w.d2 ? 1 : 0));
}

uint64_t Model::weight_bytes_per_token() const {
  const auto bytes = tensor_bytes;
  uint64_t total = bytes(wcls) + uint64_t(cfg.dim) * 4 /* final norm */ +
                   bytes(tok_emb) / uint64_t(cfg.vocab) /* one embedding row */;
  for (const LayerWeights &w : layers)
    total += bytes(w.wq) + bytes(w.wk) + bytes(w.wv) + bytes(w.wo) + bytes(w.w1) + bytes(w.w2) +
             bytes(w.w3) + 2 * uint64_t(cfg.dim) * 4 +
             (cfg.qkv_bias ? (uint64_t(cfg.q_dim()) + 2 * uint64_t(cfg.kv_dim())) * 4 : 0) +
             (cfg.qk_norm ? 2 * uint64_t(cfg.head_dim()) * 4 : 0);
  return total;
}

}  // namespace ml
