// A GGUF file as a Model (runtime/gguf.h: load_gguf): architecture llama (Llama 1-3, SmolLM2,
// TinyLlama; Llama 3's rope_freqs.weight), qwen2 (q/k/v biases) or qwen3 (per-head q/k norms, a
// head size that need not be dim / heads). The metadata is checked
// against every tensor's name, type and shape; then every tensor is converted into one owned
// buffer, the matrices split across the pool's threads:
//   Q8_0, Q4_0 matrix  → 16-row panels (layout 1, docs/mlb-format.md): the quants copied as they
//                        are (ggml's Q4_0 byte j holds elements j and j + 16, as ours), each
//                        binary16 scale widened exactly; padding rows zero (Q4 nibbles 8)
//   F32, F16, BF16     → float32 rows, exactly (matrices and vectors)
// qwen2's and qwen3's attn_q / attn_k rows, biases and norm weights are in Hugging Face's
// half-split RoPE order in GGUF (llama.cpp runs them with NeoX RoPE); they are permuted into the
// runtime's interleaved pairs, as tools/gguf.py does. Nothing is requantized.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <new>
#include <string>

#include "kernels/format/f16.h"
#include "kernels/format/panel.h"
#include "kernels/ggml_blocks.h"
#include "kernels/mutants.h"
#include "runtime/error.h"
#include "runtime/file_map.h"
#include "runtime/gguf.h"
#include "runtime/model.h"
#include "runtime/threads.h"

namespace ml {

// runtime/gguf_vocab.cc: the tokenizer of the metadata as a tokenizer image.
ml_status gguf_tokenizer(const GgufFile &g, int vocab, std::vector<uint8_t> *image, int *n_tokens, std::string *missing,
                         std::string *about);

namespace {

constexpr uint64_t kMaxDim = 1u << 20, kMaxLayers = 1u << 12, kMaxVocab = 1u << 24, kMaxSeq = 1u << 22;

bool is_float_type(uint32_t t) { return t == kGgmlF32 || t == kGgmlF16 || t == kGgmlBF16; }

constexpr const char *kSupportedMatrix = "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q3_K, Q4_K, Q5_K, Q6_K";

// One float of an F32, F16 or BF16 tensor (kernels/ggml_blocks.h: exact widening).
float widen(const uint8_t *p, uint32_t type) {
  float f;
  ggml_dequantize_row(type, p, &f, 1);
  return f;
}

// Row r of the runtime's interleaved RoPE order ← this row of Hugging Face's half-split order
// (per head of hd rows: out 2i + s ← s·hd/2 + i).
int from_half_split(int r, int hd) {
  const int h = r / hd, j = r % hd;
  return h * hd + (j % 2) * (hd / 2) + j / 2;
}

// How each GGUF block type runs (kernels/kernels.h): its quants as Q8 (int8) or Q4 (nibble)
// panels, one scale per 32 elements, a second one per 16 (d2) or an offset (m) where it has them.
// Every scale and offset is a product of a binary16 and a small integer, exact in float32, so the
// weight d·q + m is ggml's dequantized value exactly (its one rounding is the same addition).
struct Kind {
  uint32_t ggml;
  ml_type as;
  bool halves, offsets;
};
constexpr Kind kKinds[] = {
    {kGgmlQ8_0, ML_TYPE_Q8_0, false, false}, {kGgmlQ4_0, ML_TYPE_Q4_0, false, false},
    {kGgmlQ4_1, ML_TYPE_Q4_0, false, true},  {kGgmlQ5_0, ML_TYPE_Q8_0, false, false},
    {kGgmlQ5_1, ML_TYPE_Q8_0, false, true},  {kGgmlQ3_K, ML_TYPE_Q8_0, true, false},
    {kGgmlQ4_K, ML_TYPE_Q4_0, false, true},  {kGgmlQ5_K, ML_TYPE_Q8_0, false, true},
    {kGgmlQ6_K, ML_TYPE_Q8_0, true, false},
};
const Kind *kind_of(uint32_t ggml) {
  for (const Kind &k : kKinds)
    if (k.ggml == ggml) return &k;
  return nullptr;
}

// One tensor to convert: the source and where it goes.
struct Job {
  const GgufFile::Tensor *src = nullptr;
  const uint8_t *data = nullptr;
  int rows = 0, cols = 0;
  int perm_hd = 0;          // > 0: rows (vectors: elements) from the half-split order, heads of perm_hd
  ml_qtensor *mat = nullptr;   // a matrix, or
  const float **vec = nullptr;  // a vector of rows·cols floats: where its pointer goes
  uint64_t q_off = 0, d_off = 0, m_off = 0, d2_off = 0;  // m_off / d2_off: 0 when the type has none
  uint64_t end_off = 0;        // past its last array
  int row0 = 0;                // data holds the source from this row on (GgufStream: a part of it)
};

struct Mapper {
  Mapper(const GgufFile &file, const char *p) : g(file), path(p) {}
  const GgufFile &g;
  const char *path;
  bool streaming = false;  // no tensor bytes yet (GgufStream): jobs get no data pointer
  bool qwen2 = false;
  std::vector<Job> jobs;
  uint64_t total = 0;
  std::map<std::string, int> used;  // tensor names taken, for the unknown-tensor check

  std::vector<std::pair<uint64_t, uint64_t>> gaps;  // alignment bytes between arrays: zeroed

  uint64_t reserve(uint64_t bytes) {
    const uint64_t at = (total + 63) / 64 * 64;
    if (at > total) gaps.emplace_back(total, at - total);
    total = at + bytes;
    return at;
  }

  // The tensor `name` as a matrix (rows, cols) or vector (n = rows·cols, any shape with that many
  // elements); ML_E_FORMAT naming it when absent, of another shape or an unsupported type.
  ml_status find(const std::string &name, int rows, int cols, bool matrix, const GgufFile::Tensor **out) {
    const GgufFile::Tensor *t = g.tensor(name);
    *out = t;
    if (!t) return fail(ML_E_FORMAT, "%s: missing tensor %s", path, name.c_str());
    used[name] = 1;
    const GgmlType *ty = ggml_type(t->type);
    const bool ok_type = is_float_type(t->type) || (matrix && kind_of(t->type));
    if (!ok_type)
      return fail(ML_E_FORMAT, "%s: tensor %s has type %s, which this runtime does not run (supported: %s%s)", path,
                  name.c_str(), ty->name, matrix ? kSupportedMatrix : "F32, F16, BF16",
                  matrix ? "; docs/import.md" : " for vectors");
    const bool shape_ok = matrix ? t->ne[0] == uint64_t(cols) && t->rows() == uint64_t(rows) && t->ne[2] == 1 && t->ne[3] == 1
                                 : t->elements() == uint64_t(rows) * uint64_t(cols);
    if (!shape_ok) {
      char got[96];
      std::snprintf(got, sizeof got, "%llux%llux%llux%llu", static_cast<unsigned long long>(t->ne[3]),
                    static_cast<unsigned long long>(t->ne[2]), static_cast<unsigned long long>(t->ne[1]),
                    static_cast<unsigned long long>(t->ne[0]));
      const char *shown = got;
      while (std::strncmp(shown, "1x", 2) == 0 && std::strlen(shown) > 2) shown += 2;
      if (matrix)
        return fail(ML_E_FORMAT, "%s: tensor %s (%s) has shape %s, expected %dx%d from the metadata", path, name.c_str(),
                    ty->name, shown, rows, cols);
      return fail(ML_E_FORMAT, "%s: tensor %s (%s) has shape %s, expected %llu elements from the metadata", path, name.c_str(),
                  ty->name, shown, static_cast<unsigned long long>(uint64_t(rows) * uint64_t(cols)));
    }
    return ML_OK;
  }

  ml_status matrix(const std::string &name, int rows, int cols, ml_qtensor *out, int perm_hd = 0) {
    const GgufFile::Tensor *t;
    if (const ml_status s = find(name, rows, cols, true, &t)) return s;
    Job j{t, streaming ? nullptr : g.tensor_data(*t), rows, cols, perm_hd, out};
    out->rows = rows;
    out->cols = cols;
    out->dh = nullptr;
    out->d = out->m = out->d2 = nullptr;
    if (const Kind *k = kind_of(t->type)) {
      out->type = k->as;
      out->layout = ML_LAYOUT_PANEL16;
      const uint64_t padded = uint64_t(panel::padded_rows(rows));
      const uint64_t d_bytes = tensor_d_bytes(k->as, padded, uint64_t(cols), ML_LAYOUT_PANEL16);
      j.q_off = reserve(tensor_q_bytes(k->as, padded, uint64_t(cols)));
      j.d_off = reserve(d_bytes);
      if (k->halves) j.d2_off = reserve(d_bytes);
      if (k->offsets) j.m_off = reserve(d_bytes);
    } else {
      out->type = ML_TYPE_F32;
      out->layout = ML_LAYOUT_ROWS;
      j.q_off = reserve(uint64_t(rows) * uint64_t(cols) * 4);
    }
    j.end_off = total;
    jobs.push_back(j);
    return ML_OK;
  }

  // A vector of n floats; *slot receives its pointer once the buffer exists.
  ml_status vector(const std::string &name, int n, const float **slot, int perm_hd = 0) {
    const GgufFile::Tensor *t;
    if (const ml_status s = find(name, 1, n, false, &t)) return s;
    jobs.push_back(Job{t, streaming ? nullptr : g.tensor_data(*t), 1, n, perm_hd, nullptr, slot, reserve(uint64_t(n) * 4)});
    jobs.back().end_off = total;
    return ML_OK;
  }
};

// Converts panels [p0, p1) (quantized) or rows [p0, p1) (float) of job j into base.
void convert(const Job &j, uint8_t *base, int p0, int p1) {
  const GgufFile::Tensor &t = *j.src;
  const int cols = j.cols, nb = cols / ML_QK;
  const auto src_row = [&](int r) {  // mutant: qwen2's half-split rows taken as they are
    return j.perm_hd > 0 && !ML_MUTANT("gguf_qwen2_perm") ? from_half_split(r, j.perm_hd) : r;
  };
  if (j.vec || j.mat->type == ML_TYPE_F32) {
    float *out = reinterpret_cast<float *>(base + j.q_off);
    const uint64_t es = ggml_type(t.type)->bytes;
    for (int r = p0; r < p1; ++r) {
      if (j.vec) {  // a vector: element permutation
        for (int i = 0; i < cols; ++i) out[i] = widen(j.data + uint64_t(src_row(i)) * es, t.type);
        continue;
      }
      ggml_dequantize_row(t.type, j.data + uint64_t(src_row(r) - j.row0) * uint64_t(cols) * es, out + size_t(r) * size_t(cols), cols);
    }
    return;
  }
  const bool q8 = j.mat->type == ML_TYPE_Q8_0;
  const GgmlType &gt = *ggml_type(t.type);
  const int sub = int(gt.block / ML_QK), units = q8 ? 8 : 4;  // 32-element blocks per GGUF block
  uint8_t *q = base + j.q_off;
  float *d = reinterpret_cast<float *>(base + j.d_off);
  float *d2 = j.d2_off ? reinterpret_cast<float *>(base + j.d2_off) : nullptr;
  float *m = j.m_off ? reinterpret_cast<float *>(base + j.m_off) : nullptr;
  int vals[256];
  float a[8], a2[8], c[8];
  for (int p = p0; p < p1; ++p) {
    for (int i = 0; i < ML_PANEL_ROWS; ++i) {
      const int r = p * ML_PANEL_ROWS + i;
      const auto unit = [&](int b, int u) { return q + ((size_t(p) * nb + size_t(b)) * size_t(units) + size_t(u)) * 64 + 4 * size_t(i); };
      if (r >= j.rows) {  // padding rows: Q8 quants 0, Q4 nibbles 8 (0 with offsets), scales and offsets 0
        for (int b = 0; b < nb; ++b) {
          const size_t di = panel::d_index(nb, r, b);
          d[di] = 0.0f;
          if (d2) d2[di] = 0.0f;
          if (m) m[di] = 0.0f;
          for (int u = 0; u < units; ++u) std::memset(unit(b, u), q8 || m ? 0 : 0x88, 4);
        }
        continue;
      }
      const uint8_t *row = j.data + uint64_t(src_row(r) - j.row0) * uint64_t(nb / sub) * gt.bytes;
      for (int gb = 0; gb < nb / sub; ++gb) {
        ggml_decode_block(t.type, row + uint64_t(gb) * gt.bytes, vals, a, a2, c);
        for (int k = 0; k < sub; ++k) {
          const int b = gb * sub + k;
          const size_t di = panel::d_index(nb, r, b);
          d[di] = a[k];
          if (d2) d2[di] = a2[k];
          if (m) m[di] = c[k];
          const int *v = vals + 32 * k;
          for (int u = 0; u < units; ++u) {
            uint8_t *o = unit(b, u);
            for (int e = 0; e < 4; ++e)  // Q8: elements 4u..4u+3; Q4: byte 4u+e holds 4u+e and 4u+e+16
              o[e] = q8 ? uint8_t(int8_t(v[4 * u + e])) : uint8_t(v[4 * u + e] | v[4 * u + e + 16] << 4);
          }
        }
      }
    }
  }
}

// convert()'s units of job j: panels of a quantized matrix, rows of a float one, 1 for a vector.
int convert_units(const Job &j) {
  return j.vec ? 1 : j.mat->type == ML_TYPE_F32 ? j.rows : panel::padded_rows(j.rows) / ML_PANEL_ROWS;
}

// Llama 3's RoPE scaling from rope_freqs.weight (tools/gguf.py's _llama3_rope): the parameters
// from the exporter's mlb.rope.llama3.* keys, else Llama 3.1/3.2's (low 1, high 4, original context
// 8192 or llama.rope.scaling.original_context_length, the factor the largest divisor); either way
// the tensor must equal the divisors they give (relative 1e-5).
ml_status llama3_rope(const GgufFile &g, const GgufFile::Tensor &t, const uint8_t *data, int hd, double theta, Config *c) {
  const char *path = g.path();
  if (t.elements() != uint64_t(hd / 2) || !is_float_type(t.type))
    return fail(ML_E_FORMAT, "%s: tensor rope_freqs.weight must be %d floats (head_dim / 2)", path, hd / 2);
  std::vector<double> got(size_t(hd / 2));
  for (int i = 0; i < hd / 2; ++i) {
    got[size_t(i)] = widen(data + uint64_t(i) * ggml_type(t.type)->bytes, t.type);
    if (!std::isfinite(got[size_t(i)]) || got[size_t(i)] < 1)
      return fail(ML_E_FORMAT, "%s: tensor rope_freqs.weight: RoPE frequency divisors must be finite and >= 1", path);
  }
  double factor = 0, low = 1, high = 4, orig = 8192;
  bool f1 = false, f2, f3, f4;
  ml_status s;
  if ((s = g.get_float("mlb.rope.llama3.factor", &factor, &f1)) || (s = g.get_float("mlb.rope.llama3.low_freq_factor", &low, &f2)) ||
      (s = g.get_float("mlb.rope.llama3.high_freq_factor", &high, &f3)) ||
      (s = g.get_float("mlb.rope.llama3.original_context_length", &orig, &f4)))
    return s;
  if (f1 || f2 || f3 || f4) {
    if (!(f1 && f2 && f3 && f4))
      return fail(ML_E_FORMAT, "%s: metadata mlb.rope.llama3.*: all four keys or none", path);
    if (!(orig >= 1 && orig <= double(kMaxSeq) && low > 0 && low < high && factor > 0))
      return fail(ML_E_FORMAT, "%s: metadata mlb.rope.llama3.*: not a valid llama3 RoPE scaling", path);
  } else {
    factor = double(float(*std::max_element(got.begin(), got.end())));
    int64_t ctx = 0;
    bool found;
    if (g.get_int("llama.rope.scaling.original_context_length", &ctx, &found) == ML_OK && found && ctx > 0 && ctx <= int64_t(kMaxSeq))
      orig = double(ctx);
  }
  const double L = std::floor(orig), pi = 3.14159265358979323846;
  for (int i = 0; i < hd / 2; ++i) {
    const double freq = double(float(1.0 / std::pow(theta, double(2 * i) / double(hd))));
    const double wavelen = 2 * pi / freq;
    double want;
    if (wavelen < L / high)
      want = 1.0;
    else if (wavelen > L / low)
      want = factor;
    else {
      const double smooth = (L / wavelen - low) / (high - low);
      want = 1 / ((1 - smooth) / factor + smooth);
    }
    want = double(float(want));
    if (std::fabs(got[size_t(i)] - want) > 1e-5 * std::fabs(want))
      return fail(ML_E_FORMAT,
                  "%s: tensor rope_freqs.weight: RoPE frequency divisors that are not Llama 3's scaling (factor %g, "
                  "low_freq_factor %g, high_freq_factor %g, original context %g); not supported",
                  path, factor, low, high, orig);
  }
  c->rope_scaling = 1;
  c->rope_factor = float(factor);
  c->rope_low_freq_factor = float(low);
  c->rope_high_freq_factor = float(high);
  c->rope_original_max_seq = uint32_t(orig);
  return ML_OK;
}

// The conversion cache (runtime/gguf.h).
constexpr uint64_t kCacheHeader = 4096;
constexpr uint32_t kCacheVersion = 1;

uint64_t fnv1a(uint64_t h, const uint8_t *p, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

// The GGUF's key: its size, first and last MiB, and 4 KiB of every 16 MiB.
uint64_t cache_key(const uint8_t *data, uint64_t size) {
  uint64_t h = 0xcbf29ce484222325ull;
  uint8_t sz[8];
  for (int i = 0; i < 8; ++i) sz[i] = uint8_t(size >> (8 * i));
  h = fnv1a(h, sz, 8);
  const uint64_t mib = 1 << 20, head = std::min(size, mib);
  h = fnv1a(h, data, head);
  for (uint64_t at = 16 * mib; at + 4096 <= size; at += 16 * mib) h = fnv1a(h, data + at, 4096);
  return fnv1a(h, data + (size - std::min(size, mib)), std::min(size, mib));
}

std::string cache_path(const char *dir, const char *path, uint64_t key) {
  const char *base = path;
  for (const char *p = path; *p; ++p)
    if (*p == '/' || *p == '\\') base = p + 1;
  char hex[24];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(key));
  std::string out(dir);
  if (!out.empty() && out.back() != '/' && out.back() != '\\') out += '/';
  return out + base + "." + hex + ".mlcache";
}

void put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i));
}
uint64_t get64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

// Writes the converted weights to `file` (a temporary name, then renamed): "" or why not.
std::string write_cache(const std::string &dir, const std::string &file, uint64_t key, const OwnedBytes &w, bool shared) {
  uint8_t head[kCacheHeader] = {};
  std::memcpy(head, "MLC1", 4);
  head[4] = uint8_t(kCacheVersion);
  put64(head + 8, key);
  put64(head + 16, w.n);
  head[24] = shared ? 1 : 0;
  const std::string tmp = file + ".partial";
  make_dir_utf8(dir.c_str());  // the folder, when it is new (its parent must exist)
  std::FILE *f = fopen_utf8(tmp.c_str(), "wb");
  if (!f) return "cannot write " + tmp;
  const bool ok = std::fwrite(head, 1, sizeof head, f) == sizeof head && (w.n == 0 || std::fwrite(w.p, 1, size_t(w.n), f) == w.n);
  if (std::fclose(f) != 0 || !ok) {
    remove_utf8(tmp.c_str());
    return "cannot write " + tmp + " (disk full?)";
  }
  if (rename_replace(tmp.c_str(), file.c_str()) != 0) {
    remove_utf8(tmp.c_str());
    return "cannot rename " + tmp;
  }
  return "";
}

// What load_gguf and GgufStream decide from the header alone.
struct Plan {
  std::string arch, types, tok_about;  // types: the matrices' GGUF types, for the note
  int n_matrices = 0;
  const GgufFile::Tensor *rope_freqs = nullptr;  // Llama 3's RoPE divisors (GgufStream: checked at finish)
  double theta = 0;
  bool compare_classifier = false;  // GgufStream: output.weight has the embedding's type and shape
};

// Config, tensor places (mp's jobs), tokenizer image and notes of *m from g's metadata and tensor
// table; tensor bytes are read only when !mp->streaming (a classifier's comparison, RoPE divisors).
ml_status plan_gguf(Model *m, const GgufFile &g, const char *path, int cached_shared, Mapper *mp_out, Plan *plan) {
  std::string &arch = plan->arch;
  if (const ml_status s = g.get_string("general.architecture", &arch)) return s;
  if (arch == "qwen3moe")
    return fail(ML_E_FORMAT, "%s: general.architecture = 'qwen3moe': mixture-of-experts models are not supported", path);
  if (arch != "llama" && arch != "qwen2" && arch != "qwen3")
    return fail(ML_E_FORMAT, "%s: general.architecture = '%s' is not supported (llama, qwen2, qwen3)", path,
                gguf_printable(arch).c_str());
  Mapper &mp = *mp_out;
  mp.qwen2 = arch == "qwen2";
  const bool qwen3 = arch == "qwen3";
  Config &c = m->cfg;
  c = Config();
  c.version = qwen3 ? 3 : 2;
  c.arch = mp.qwen2 ? 1 : qwen3 ? 2 : 0;
  c.qkv_bias = mp.qwen2;
  c.qk_norm = qwen3;

  // Hyperparameters: <arch>.<name>, each an integer in [1, limit].
  struct Hp { const char *name; uint64_t limit; int *dst; int64_t def; };
  int n_kv = -1;
  const Hp hps[] = {{"embedding_length", kMaxDim, &c.dim, -1},       {"block_count", kMaxLayers, &c.n_layers, -1},
                    {"attention.head_count", kMaxDim, &c.n_heads, -1}, {"attention.head_count_kv", kMaxDim, &n_kv, 0},
                    {"feed_forward_length", kMaxDim, &c.hidden_dim, -1}, {"context_length", kMaxSeq, &c.max_seq, -1}};
  for (const Hp &h : hps) {
    const std::string key = arch + "." + h.name;
    int64_t v = 0;
    bool found = false;
    if (const ml_status s = g.get_int(key.c_str(), &v, h.def == 0 ? &found : nullptr)) return s;
    if (h.def == 0 && !found) continue;
    if (v < 1 || uint64_t(v) > h.limit)
      return fail(ML_E_FORMAT, "%s: metadata %s = %lld is out of range [1, %llu]", path, key.c_str(), static_cast<long long>(v),
                  static_cast<unsigned long long>(h.limit));
    *h.dst = int(v);
  }
  c.n_kv_heads = n_kv > 0 ? n_kv : c.n_heads;
  double eps = 0, theta = 10000;
  bool found = false;
  if (const ml_status s = g.get_float((arch + ".attention.layer_norm_rms_epsilon").c_str(), &eps)) return s;
  if (const ml_status s = g.get_float((arch + ".rope.freq_base").c_str(), &theta, &found)) return s;
  c.norm_eps = float(eps);
  c.rope_theta = float(theta);
  if (!(std::isfinite(c.norm_eps) && c.norm_eps > 0))
    return fail(ML_E_FORMAT, "%s: metadata %s.attention.layer_norm_rms_epsilon = %g must be finite and > 0", path, arch.c_str(), eps);
  if (!(std::isfinite(c.rope_theta) && c.rope_theta > 0))
    return fail(ML_E_FORMAT, "%s: metadata %s.rope.freq_base = %g must be finite and > 0", path, arch.c_str(), theta);
  // The head size: qwen3 states it (attention.key_length; it need not be dim / heads).
  int64_t key_length = 0;
  if (const ml_status s = g.get_int((arch + ".attention.key_length").c_str(), &key_length, &found)) return s;
  if (qwen3 && found) {
    if (key_length < 2 || key_length >= (1 << 20) || key_length % 2 != 0 || uint64_t(key_length) * uint64_t(c.n_heads) > kMaxDim)
      return fail(ML_E_FORMAT, "%s: metadata qwen3.attention.key_length = %lld: the head size must be even, in [2, 2^20), and "
                  "head_count of them at most 2^20", path, static_cast<long long>(key_length));
    if (c.dim % c.n_heads != 0 || key_length != c.dim / c.n_heads) c.head_size = int(key_length);
  } else if (c.dim % c.n_heads != 0) {
    return fail(ML_E_SHAPE, "%s: metadata %s.attention.head_count = %d does not divide %s.embedding_length = %d", path,
                arch.c_str(), c.n_heads, arch.c_str(), c.dim);
  }
  const int hd = c.head_dim();
  if (hd % 2 != 0) return fail(ML_E_SHAPE, "%s: the head size %d must be even (RoPE rotates pairs)", path, hd);
  if (c.n_kv_heads > c.n_heads || c.n_heads % c.n_kv_heads != 0)
    return fail(ML_E_SHAPE, "%s: metadata %s.attention.head_count = %d is not a multiple of head_count_kv = %d", path,
                arch.c_str(), c.n_heads, c.n_kv_heads);
  for (const char *k : {"rope.dimension_count", "attention.key_length", "attention.value_length"}) {
    int64_t v = 0;
    if (const ml_status s = g.get_int((arch + "." + k).c_str(), &v, &found)) return s;
    if (found && v != hd)
      return fail(ML_E_FORMAT, "%s: metadata %s.%s = %lld differs from the head size %d (%s); not supported", path,
                  arch.c_str(), k, static_cast<long long>(v), hd,
                  c.head_size ? "attention.key_length" : "embedding_length / head_count");
  }
  std::string scaling;
  if (const ml_status s = g.get_string((arch + ".rope.scaling.type").c_str(), &scaling, &found)) return s;
  const GgufFile::Tensor *rope_freqs = arch == "llama" ? g.tensor("rope_freqs.weight") : nullptr;
  if (found && scaling != "none" && !(scaling == "llama3" && rope_freqs))
    return fail(ML_E_FORMAT, "%s: metadata %s.rope.scaling.type = '%s': RoPE scaling is not supported (only Llama 3's, given by rope_freqs.weight)",
                path, arch.c_str(), gguf_printable(scaling).c_str());
  int64_t experts = 0, window = 0;
  if (const ml_status s = g.get_int((arch + ".expert_count").c_str(), &experts, &found)) return s;
  if (found && experts > 0)
    return fail(ML_E_FORMAT, "%s: metadata %s.expert_count = %lld: mixture-of-experts models are not supported", path,
                arch.c_str(), static_cast<long long>(experts));
  if (mp.qwen2 && g.get_int("qwen2.attention.sliding_window", &window, &found) == ML_OK && found && window)
    return fail(ML_E_FORMAT, "%s: metadata qwen2.attention.sliding_window = %lld: sliding-window attention is not supported",
                path, static_cast<long long>(window));

  // The tensors, in the .mlb's order (docs/mlb-format.md).
  const GgufFile::Tensor *emb = g.tensor("token_embd.weight");
  if (!emb) return fail(ML_E_FORMAT, "%s: missing tensor token_embd.weight", path);
  if (emb->ne[2] != 1 || emb->ne[3] != 1)
    return fail(ML_E_FORMAT, "%s: tensor token_embd.weight has %u dimensions, not 2 (vocabulary x embedding_length)", path,
                emb->n_dims);
  if (emb->rows() < 1 || emb->rows() > kMaxVocab)
    return fail(ML_E_FORMAT, "%s: tensor token_embd.weight has %llu rows (the vocabulary: 1 to 2^24)", path,
                static_cast<unsigned long long>(emb->rows()));
  c.vocab = int(emb->rows());
  int64_t meta_vocab = 0;
  if (g.get_int((arch + ".vocab_size").c_str(), &meta_vocab, &found) == ML_OK && found && meta_vocab != c.vocab)
    return fail(ML_E_FORMAT, "%s: metadata %s.vocab_size = %lld but token_embd.weight has %d rows", path, arch.c_str(),
                static_cast<long long>(meta_vocab), c.vocab);
  const int D = c.dim, KV = c.kv_dim(), H = c.hidden_dim, Q = c.q_dim();
  const int perm = mp.qwen2 || qwen3 ? hd : 0;  // llama.cpp keeps HF's half-split q/k order for both
  ml_status s;
  if ((s = mp.matrix("token_embd.weight", c.vocab, D, &m->tok_emb))) return s;
  // Each layer has 9 tensors (qwen2 12), besides token_embd.weight and output_norm.weight: a
  // block_count the file's tensors cannot hold is refused before its layers are allocated, naming
  // the first tensor missing in the order below (one is: the count falls short).
  if (uint64_t(c.n_layers) * (mp.qwen2 ? 12 : 9) + 2 > g.tensors().size()) {
    static const char *const kLayer[] = {"attn_norm.weight", "attn_q.weight",      "attn_k.weight",   "attn_v.weight",
                                         "attn_q.bias",      "attn_k.bias",        "attn_v.bias",     "attn_output.weight",
                                         "ffn_norm.weight",  "ffn_gate.weight",    "ffn_down.weight", "ffn_up.weight"};
    for (int l = 0; l < c.n_layers; ++l)
      for (const char *n : kLayer) {
        if (!mp.qwen2 && std::strstr(n, ".bias")) continue;
        const std::string name = "blk." + std::to_string(l) + "." + n;
        if (!g.tensor(name)) return fail(ML_E_FORMAT, "%s: missing tensor %s", path, name.c_str());
      }
    return fail(ML_E_FORMAT, "%s: missing tensor output_norm.weight", path);
  }
  m->layers.assign(size_t(c.n_layers), LayerWeights());
  for (int l = 0; l < c.n_layers; ++l) {
    LayerWeights &w = m->layers[size_t(l)];
    const std::string b = "blk." + std::to_string(l) + ".";
    if ((s = mp.vector(b + "attn_norm.weight", D, &w.attn_norm)) || (s = mp.matrix(b + "attn_q.weight", Q, D, &w.wq, perm)) ||
        (s = mp.matrix(b + "attn_k.weight", KV, D, &w.wk, perm)) || (s = mp.matrix(b + "attn_v.weight", KV, D, &w.wv)))
      return s;
    w.bq = w.bk = w.bv = nullptr;
    // qwen3: per-head q/k norm weights, each head's hd entries permuted as its rows are
    if (qwen3 && ((s = mp.vector(b + "attn_q_norm.weight", hd, &w.q_norm, perm)) ||
                  (s = mp.vector(b + "attn_k_norm.weight", hd, &w.k_norm, perm))))
      return s;
    if (mp.qwen2 && ((s = mp.vector(b + "attn_q.bias", Q, &w.bq, perm)) || (s = mp.vector(b + "attn_k.bias", KV, &w.bk, perm)) ||
                     (s = mp.vector(b + "attn_v.bias", KV, &w.bv))))
      return s;
    if ((s = mp.matrix(b + "attn_output.weight", D, Q, &w.wo)) || (s = mp.vector(b + "ffn_norm.weight", D, &w.ffn_norm)) ||
        (s = mp.matrix(b + "ffn_gate.weight", H, D, &w.w1)) || (s = mp.matrix(b + "ffn_down.weight", D, H, &w.w2)) ||
        (s = mp.matrix(b + "ffn_up.weight", H, D, &w.w3)))
      return s;
  }
  if ((s = mp.vector("output_norm.weight", D, &m->final_norm))) return s;
  const GgufFile::Tensor *out = g.tensor("output.weight");
  // A classifier with the embedding's bytes is stored once (as tools/gguf.py does).
  // (Only a 2-D one: a 3-D or 4-D output.weight with the same bytes goes through matrix(), which
  // names its shape.)
  const bool same_shape = out && out->type == emb->type && out->bytes == emb->bytes && out->ne[0] == emb->ne[0] &&
                          out->ne[2] == 1 && out->ne[3] == 1;
  // (Streamed, the bytes are not there yet: taken as shared here, GgufStream converts it apart and
  // keeps it only when it differs.)
  c.shared_classifier = !out || (same_shape && (mp.streaming || (cached_shared >= 0 ? cached_shared == 1
                                                                                     : std::memcmp(g.tensor_data(*out), g.tensor_data(*emb),
                                                                                                   size_t(out->bytes)) == 0)));
  plan->compare_classifier = out && same_shape && mp.streaming;
  if (out && c.shared_classifier)
    mp.used["output.weight"] = 1;
  else if (out && (s = mp.matrix("output.weight", c.vocab, D, &m->wcls)))
    return s;
  if (rope_freqs) {
    mp.used["rope_freqs.weight"] = 1;
    if (!mp.streaming && (s = llama3_rope(g, *rope_freqs, g.tensor_data(*rope_freqs), hd, theta, &c))) return s;
  }
  plan->rope_freqs = rope_freqs;
  plan->theta = theta;
  for (const GgufFile::Tensor &t : g.tensors())
    if (!mp.used.count(t.name)) {
      const bool qk_norm = !qwen3 && (t.name.find("attn_q_norm") != std::string::npos || t.name.find("attn_k_norm") != std::string::npos);
      return fail(ML_E_FORMAT, "%s: tensor %s (%s) is not part of the %s architecture this runtime runs%s", path,
                  gguf_printable(t.name).c_str(),
                  ggml_type(t.type)->name, arch.c_str(), qk_norm ? " (a per-head q/k norm, Qwen3's)" : "");
    }

  // The model's weight type (ml_get_info): the first quantized matrix's; a product quantizes its
  // activations when its own matrix is quantized (runtime/forward.cc), whose K then is a multiple of 32.
  c.wtype = ML_TYPE_F32;
  std::map<std::string, int> by_type;  // the matrices' GGUF types, for the note
  int &n_matrices = plan->n_matrices;
  for (const Job &j : mp.jobs)
    if (j.mat) {
      ++n_matrices;
      ++by_type[ggml_type(j.src->type)->name];
      if (c.wtype == ML_TYPE_F32 && j.mat->type != ML_TYPE_F32) c.wtype = ml_type(j.mat->type);
    }
  std::string &types = plan->types;
  for (const auto &bt : by_type) types += (types.empty() ? "" : ", ") + std::to_string(bt.second) + " " + bt.first;
  c.layout = c.wtype == ML_TYPE_F32 ? ML_LAYOUT_ROWS : ML_LAYOUT_PANEL16;

  // The tokenizer of the metadata (runtime/gguf_vocab.cc).
  std::string &tok_about = plan->tok_about;
  int n_tokens = c.vocab;
  if ((s = gguf_tokenizer(g, c.vocab, &m->tokenizer_image, &n_tokens, &m->tokenizer_missing, &tok_about))) return s;
  c.n_tokens = n_tokens;
  return ML_OK;
}

// Allocates *w for mp's layout, its alignment gaps zeroed; ML_E_NOMEM naming `what` when it cannot.
ml_status allocate(OwnedBytes *w, const Mapper &mp, const char *path, const char *what) {
  if (!w->allocate(mp.total))
    return fail(ML_E_NOMEM, "%s: cannot allocate %llu bytes for %s", path, static_cast<unsigned long long>(mp.total),
                what);
  for (const auto &gap : mp.gaps) std::memset(w->p + gap.first, 0, size_t(gap.second));
  return ML_OK;
}

// Points the model's views (mp's jobs) into base, the converted weights.
void place(Mapper &mp, uint8_t *base) {
  for (Job &j : mp.jobs) {
    if (j.mat) {
      j.mat->q = base + j.q_off;
      if (j.mat->type != ML_TYPE_F32) j.mat->d = reinterpret_cast<const float *>(base + j.d_off);
      if (j.d2_off) j.mat->d2 = reinterpret_cast<const float *>(base + j.d2_off);
      if (j.m_off) j.mat->m = reinterpret_cast<const float *>(base + j.m_off);
    } else {
      *j.vec = reinterpret_cast<const float *>(base + j.q_off);
    }
  }
}

// The end of load_gguf and GgufStream::finish: the shared classifier's view, and Model::load_note:
// what was converted, how (mapped from the cache, or converted; `streamed`: said after it), how long.
void finish_load(Model *m, const GgufFile &g, const Plan &p, bool mapped, const char *streamed,
                 std::chrono::steady_clock::time_point t_start, int threads, uint64_t bytes) {
  const Config &c = m->cfg;
  if (c.shared_classifier) m->wcls = m->tok_emb;
  m->gguf = true;
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_start).count();
  const char *how = mapped                     ? "mapped, not converted,"
                    : c.wtype == ML_TYPE_F32 ? "widened to float32"
                                             : "repacked into 16-row panels";
  char note[768];
  std::snprintf(note, sizeof note,
                "GGUF v%u %s (dim %d, %d layers, vocab %d%s): %d matrices (%s) %s%s in %.0f ms on %d thread%s, "
                "%.1f MiB; %s",
                g.version(), p.arch.c_str(), c.dim, c.n_layers, c.vocab, c.shared_classifier ? "" : ", separate classifier",
                p.n_matrices, p.types.c_str(), how, streamed, ms, threads, threads == 1 ? "" : "s",
                double(bytes) / (1 << 20), p.tok_about.c_str());
  m->load_note = note;
}

}  // namespace

ml_status load_gguf(Model *m, const uint8_t *data, uint64_t size, const char *path, ThreadPool *pool, const char *cache_dir,
                    bool map_weights) {
  const auto t_start = std::chrono::steady_clock::now();
  GgufFile g;
  if (const ml_status s = g.parse(data, size, path)) return s;
  // The cache of this file's conversion, when asked for and present with this file's key: its
  // header says whether the classifier was stored once (saving a compare of both tensors).
  uint64_t key = 0;
  std::string cache_file;
  FileMap &cache = m->file;  // the model views the mapped cache when it is used
  cache.close();
  int cached_shared = -1;  // -1: no usable cache
  if (cache_dir && cache_dir[0]) {
    key = cache_key(data, size);
    cache_file = cache_path(cache_dir, path, key);
    PathInfo pi;
    if (path_info(cache_file.c_str(), &pi) && !pi.is_dir && cache.open(cache_file.c_str(), "cache") == ML_OK &&
        cache.size() >= kCacheHeader && std::memcmp(cache.data(), "MLC1", 4) == 0 && cache.data()[4] == kCacheVersion &&
        get64(cache.data() + 8) == key && get64(cache.data() + 16) == cache.size() - kCacheHeader && cache.data()[24] <= 1)
      cached_shared = cache.data()[24];
    else
      cache.close();
    clear_error();  // a missing or unusable cache is no failure
  }
  Mapper mp(g, path);
  Plan plan;
  if (const ml_status s = plan_gguf(m, g, path, cached_shared, &mp, &plan)) return s;
  const Config &c = m->cfg;

  // Convert: one buffer, the matrices split across the threads by panels (rows for float ones);
  // or the cache's bytes, laid out by the same plan.
  const bool from_cache = cached_shared >= 0 && cache.size() - kCacheHeader == mp.total;
  uint8_t *base;
  bool copied = false;  // the cache read into huge pages (copy_to_huge_pages)
  if (from_cache) {
    copied = !map_weights && copy_to_huge_pages(&cache, &m->owned, pool);
    base = const_cast<uint8_t *>(cache.data()) + kCacheHeader;
  } else {
    if (const ml_status s = allocate(&m->owned, mp, path, "the converted weights")) return s;
    base = m->owned.p;
  }
  place(mp, base);
  const auto work = [&](int tid, int nth) {
    for (const Job &j : mp.jobs) {
      const int units = convert_units(j);
      const int a = int(int64_t(units) * tid / nth), b = int(int64_t(units) * (tid + 1) / nth);
      if (a < b) convert(j, base, a, b);
    }
  };
  const int threads = from_cache || !pool ? 1 : pool->size();
  if (pool && !from_cache)  // (from the cache nothing is converted: the views point into the mapping)
    pool->run(work);
  else if (!from_cache)
    work(0, 1);
  std::string cache_note;
  if (from_cache) {
    cache_note = (copied ? "; copied into huge pages from the cache " : "; mapped from the cache ") + cache_file;
  } else if (!cache_file.empty()) {
    const std::string why = write_cache(cache_dir, cache_file, key, m->owned, c.shared_classifier);
    cache_note = why.empty() ? "; kept in the cache " + cache_file : "; not cached: " + why;
  }
  finish_load(m, g, plan, from_cache, "", t_start, threads, mp.total);
  m->load_note += cache_note;
  if (!from_cache) {
    cache.close();
    m->file.view(m->owned.p, m->owned.n);
  }
  return ML_OK;
}

ml_status gguf_tokenizer_image(const uint8_t *data, uint64_t size, const char *path, std::vector<uint8_t> *image,
                               std::string *missing) {
  GgufFile g;
  if (const ml_status s = g.parse(data, size, path)) return s;
  // The vocabulary: token_embd.weight's rows when there is one, else the tokenizer's own size.
  uint64_t vocab = 0;
  if (const GgufFile::Tensor *emb = g.tensor("token_embd.weight")) vocab = emb->rows();
  if (const GgufFile::Kv *t = g.find("tokenizer.ggml.tokens"); t && vocab == 0 && t->type == GgufFile::kArray) vocab = t->count;
  if (vocab < 1 || vocab > kMaxVocab) vocab = kMaxVocab;
  int n_tokens = 0;
  std::string about;
  return gguf_tokenizer(g, int(vocab), image, &n_tokens, missing, &about);
}

// ---- GgufStream (runtime/gguf.h): the conversion as the bytes arrive.

struct GgufStream::Impl {
  // One tensor's bytes in the file, converted `unit_rows` source rows at a time (a whole tensor is
  // one row of all its bytes); job nullptr: rope_freqs.weight, kept for finish().
  struct Piece {
    uint64_t at;  // its first byte in the file
    Job *job;
    uint64_t rows, row_bytes, unit_rows, units, done = 0;
  };
  explicit Impl(const char *name) : path(name && name[0] ? name : "GGUF"), mp(g, path.c_str()), cls_mp(g, path.c_str()) {}
  std::string path;
  GgufFile g;
  Mapper mp;
  Mapper cls_mp;  // plan.compare_classifier: output.weight alone, converted into model.classifier
  Plan plan;
  Model model;
  const Job *emb_job = nullptr, *cls_job = nullptr;
  bool emb_done = false, cls_done = false;
  std::vector<uint8_t> header;  // the file's header (the metadata's views point here)
  uint64_t size = 0, pos = 0;
  std::vector<Piece> pieces;
  size_t next = 0;              // the piece bytes go to
  std::vector<uint8_t> stage;   // a unit that came in parts
  std::vector<uint8_t> rope;
  std::chrono::steady_clock::time_point t_start = std::chrono::steady_clock::now();

  // Converts units [u0, u1) of pc from data (its first byte is unit u0's).
  ml_status convert_piece(Piece &pc, const uint8_t *data, uint64_t u0, uint64_t u1) {
    if (!pc.job) {
      rope.assign(data, data + pc.row_bytes);
      pc.done = u1;
      return ML_OK;
    }
    uint8_t *base = model.owned.p;
    if (pc.job == cls_job) {  // the classifier's own buffer, made when its first bytes come
      if (!model.classifier.p)
        if (const ml_status st = allocate(&model.classifier, cls_mp, path.c_str(), "output.weight")) return st;
      base = model.classifier.p;
    }
    Job j = *pc.job;
    j.data = data;
    j.row0 = int(u0 * pc.unit_rows);
    convert(j, base, int(u0), pc.rows == 1 ? convert_units(j) : int(u1));  // a piece's units are convert()'s, or whole
    pc.done = u1;
    if (pc.done == pc.units) {
      emb_done = emb_done || pc.job == emb_job;
      cls_done = cls_done || pc.job == cls_job;
      if (cls_job && emb_done && cls_done) share_classifier();
    }
    return ML_OK;
  }

  // Both converted: the classifier is the embedding's bytes (its buffer let go) or its own.
  void share_classifier() {
    Config &c = model.cfg;
    c.shared_classifier = std::memcmp(model.owned.p + emb_job->q_off, model.classifier.p + cls_job->q_off,
                                      size_t(emb_job->end_off - emb_job->q_off)) == 0;
    if (c.shared_classifier) {
      model.classifier.allocate(0);
      model.wcls = model.tok_emb;
    } else {
      place(cls_mp, model.classifier.p);
    }
    cls_job = nullptr;
  }
};

GgufStream::GgufStream() = default;
GgufStream::~GgufStream() { delete impl_; }
uint64_t GgufStream::weight_bytes() const { return impl_ ? impl_->mp.total : 0; }
uint64_t GgufStream::fed() const { return impl_ ? impl_->pos : 0; }
const Config *GgufStream::config() const { return impl_ ? &impl_->model.cfg : nullptr; }

ml_status GgufStream::begin(const uint8_t *head, uint64_t n, uint64_t size, const char *name, bool *more) {
  *more = false;
  delete impl_;
  impl_ = new (std::nothrow) Impl(name);
  if (!impl_) return fail(ML_E_NOMEM, "cannot allocate the GGUF stream");
  Impl &s = *impl_;
  ml_status st = s.g.parse(head, size, s.path.c_str(), n);
  if (st == ML_OK) {
    s.header.assign(head, head + std::min(n, s.g.data_offset()));
    s.g.moved_to(s.header.data());
    s.size = size;
    s.mp.streaming = true;
    st = plan_gguf(&s.model, s.g, s.path.c_str(), -1, &s.mp, &s.plan);
  }
  if (st == ML_OK) st = allocate(&s.model.owned, s.mp, s.path.c_str(), "the converted weights");
  if (st != ML_OK) {
    *more = s.g.header_short();
    delete impl_;
    impl_ = nullptr;
    return st;
  }
  place(s.mp, s.model.owned.p);
  if (s.plan.compare_classifier) {
    const Config &c = s.model.cfg;
    s.cls_mp.streaming = true;
    if (const ml_status st = s.cls_mp.matrix("output.weight", c.vocab, c.dim, &s.model.wcls)) return st;  // (planned before: no error)
    s.model.wcls = s.model.tok_emb;  // until it is found to differ
    s.cls_job = &s.cls_mp.jobs[0];
    for (const Job &j : s.mp.jobs)
      if (j.mat == &s.model.tok_emb) s.emb_job = &j;
  }
  // A matrix in convert()'s units (a quantized one's 16-row panels, a float one's rows), but qwen's
  // permuted q/k: whole, as a vector (one row of all its bytes).
  const auto add = [&s](Job *j, const GgufFile::Tensor &t) {
    const uint64_t rows = j && !j->vec && j->perm_hd == 0 ? uint64_t(j->rows) : 1;
    const uint64_t unit = rows > 1 && j->mat->type != ML_TYPE_F32 ? ML_PANEL_ROWS : 1;
    s.pieces.push_back({s.g.data_offset() + t.off, j, rows, t.bytes / rows, unit, (rows + unit - 1) / unit});
  };
  for (Job &j : s.mp.jobs) add(&j, *j.src);
  if (s.cls_job) add(&s.cls_mp.jobs[0], *s.cls_job->src);
  if (s.plan.rope_freqs) add(nullptr, *s.plan.rope_freqs);
  std::sort(s.pieces.begin(), s.pieces.end(), [](const Impl::Piece &a, const Impl::Piece &b) { return a.at < b.at; });
  return ML_OK;
}

ml_status GgufStream::feed(const uint8_t *p, uint64_t n) {
  if (!impl_) return fail(ML_E_ARG, "GGUF stream: feed() without a successful begin()");
  Impl &s = *impl_;
  if (n > s.size - s.pos)
    return fail(ML_E_FORMAT, "%s: more bytes than the %llu the file was said to have", s.path.c_str(),
                static_cast<unsigned long long>(s.size));
  while (n > 0) {
    if (s.next == s.pieces.size()) {  // past the last tensor
      s.pos += n;
      break;
    }
    Impl::Piece &pc = s.pieces[s.next];
    uint64_t take;
    if (s.pos < pc.at) {  // the header, alignment
      take = std::min(n, pc.at - s.pos);
    } else {
      const uint64_t u = pc.done, first = u * pc.unit_rows * pc.row_bytes;  // the unit's first byte in the tensor
      const uint64_t unit_bytes = std::min((u + 1) * pc.unit_rows, pc.rows) * pc.row_bytes - first;
      const uint64_t rows_here = std::min(pc.rows, (s.pos - pc.at + n) / pc.row_bytes);
      const uint64_t u_end = rows_here == pc.rows ? pc.units : rows_here / pc.unit_rows;
      if (s.stage.empty() && u_end > u) {  // whole units in p: converted from it
        take = std::min(u_end * pc.unit_rows, pc.rows) * pc.row_bytes - first;
        if (const ml_status st = s.convert_piece(pc, p, u, u_end)) return st;
      } else {  // part of a unit: staged
        take = std::min(n, unit_bytes - s.stage.size());
        s.stage.insert(s.stage.end(), p, p + take);
        if (s.stage.size() == unit_bytes) {
          if (const ml_status st = s.convert_piece(pc, s.stage.data(), u, u + 1)) return st;
          s.stage.clear();
        }
      }
      if (pc.done == pc.units) ++s.next;
    }
    p += take;
    n -= take;
    s.pos += take;
  }
  return ML_OK;
}

ml_status GgufStream::finish(Model *m) {
  if (!impl_) return fail(ML_E_ARG, "GGUF stream: finish() without a successful begin()");
  Impl &s = *impl_;
  if (s.pos != s.size)
    return fail(ML_E_FORMAT, "%s: truncated GGUF: %llu of its %llu bytes came", s.path.c_str(),
                static_cast<unsigned long long>(s.pos), static_cast<unsigned long long>(s.size));
  Model &w = s.model;
  Config &c = w.cfg;
  if (s.plan.rope_freqs)
    if (const ml_status st = llama3_rope(s.g, *s.plan.rope_freqs, s.rope.data(), c.head_dim(), s.plan.theta, &c)) return st;
  w.source_bytes = s.size;
  finish_load(&w, s.g, s.plan, false, " as the file streamed in", s.t_start, 1, s.mp.total);
  m->take(&w);
  delete impl_;
  impl_ = nullptr;
  return ML_OK;
}

}  // namespace ml
