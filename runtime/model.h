// A loaded .mlb model (docs/mlb-format.md): the validated header and zero-copy tensor views into
// the file mapping.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "runtime/file_map.h"
#include "runtime/ml.h"

namespace ml {

class ThreadPool;

inline constexpr uint32_t kMlbVersion = 3;  // the newest version this build reads (1 to 3)
inline constexpr uint64_t kHeaderBytes = 256;
inline constexpr uint64_t kAlign = 64;

struct Config {
  int dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, hidden_dim = 0, vocab = 0, max_seq = 0;
  float rope_theta = 0, norm_eps = 0;
  ml_type wtype = ML_TYPE_F32;
  bool shared_classifier = false;
  uint32_t layout = 0;
  // Version 2 (all zero / false in a version-1 file):
  uint32_t version = 1;
  uint32_t arch = 0;           // 0 llama, 1 qwen2, 2 qwen3 (descriptive)
  bool qkv_bias = false;       // per layer bq (dim), bk, bv (kv_dim) after wv
  uint32_t rope_scaling = 0;   // 0 none, 1 llama3 (applied in the RoPE tables)
  float rope_factor = 0, rope_low_freq_factor = 0, rope_high_freq_factor = 0;
  uint32_t rope_original_max_seq = 0;
  int n_tokens = 0;            // the tokenizer's size (== vocab when the header says 0)
  // Version 3 (0 / false in older files):
  int head_size = 0;           // explicit head_dim (Qwen3: need not be dim / n_heads); 0 = dim / n_heads
  bool qk_norm = false;        // per layer q_norm, k_norm (head_dim each): per-head RMSNorm of q, k before RoPE

  int head_dim() const { return head_size > 0 ? head_size : dim / n_heads; }
  int q_dim() const { return head_dim() * n_heads; }  // rows of wq, cols of wo (== dim unless head_size says otherwise)
  int kv_dim() const { return head_dim() * n_kv_heads; }
  int kv_mul() const { return n_heads / n_kv_heads; }
};

struct LayerWeights {
  const float *attn_norm;      // (dim)
  ml_qtensor wq, wk, wv, wo;   // (q_dim, dim) (kv_dim, dim) (kv_dim, dim) (dim, q_dim); q_dim = n_heads·head_dim
  const float *bq, *bk, *bv;   // (q_dim) (kv_dim) (kv_dim), or all nullptr without qkv_bias
  const float *q_norm = nullptr, *k_norm = nullptr;  // (head_dim) each, shared by all heads; nullptr without qk_norm
  const float *ffn_norm;       // (dim)
  ml_qtensor w1, w2, w3;       // (hidden, dim) (dim, hidden) (hidden, dim)
};

// A heap buffer of weights (a GGUF model's converted ones, a .mlb's copied ones), not zero-filled:
// the conversion writes every byte (each thread its own share, so the first-touch faults are
// spread). ml_alloc_large's (simd/compiler.h): large ones in huge pages.
struct OwnedBytes {
  uint8_t *p = nullptr;
  uint64_t n = 0;
  OwnedBytes() = default;
  OwnedBytes(const OwnedBytes &) = delete;
  OwnedBytes &operator=(const OwnedBytes &) = delete;
  ~OwnedBytes();
  bool allocate(uint64_t bytes);  // false when it cannot be had
};

struct Model {
  FileMap file;                      // .mlb: the mapping the views point into; GGUF: a view of `owned`
  OwnedBytes owned;                  // GGUF: every tensor, converted (runtime/gguf.h)
  OwnedBytes classifier;             // a streamed GGUF's output.weight when it differs from the embedding (GgufStream)
  bool gguf = false;
  uint64_t source_bytes = 0;         // the file's size (.mlb or GGUF)
  std::string load_note;             // GGUF: what was converted and how long it took; .mlb: copied into huge pages (one line)
  std::vector<uint8_t> tokenizer_image;  // GGUF: the tokenizer of its metadata (tokenizer.bin or MLTK bytes)
  std::string tokenizer_missing;     // GGUF without a tokenizer ml_open can use: why
  Config cfg;
  ml_qtensor tok_emb;                // (vocab, dim)
  std::vector<LayerWeights> layers;  // n_layers
  const float *final_norm;           // (dim)
  ml_qtensor wcls;                   // (vocab, dim); == tok_emb when shared

  // Weight bytes one decode step reads: every matrix, the classifier, the norms, one embedding row.
  uint64_t weight_bytes_per_token() const;
  // Takes a converted GGUF model (GgufStream::finish): its buffers (the views point into them and
  // move with them; `file` becomes a view of `owned`) and every field above. A field added above
  // belongs here too.
  void take(Model *from);
};

// Parses and validates the 256-byte header (bytes may be hostile). n = bytes available.
ml_status parse_header(const uint8_t *p, uint64_t n, Config *cfg);

// Maps `path` and validates everything (header, every array against the file length, alignment).
// A GGUF file is read by runtime/gguf.h instead (its conversion split across pool's threads when
// pool is not nullptr). Unless map_weights, a mapped .mlb (or GGUF cache) is then copied into huge
// pages where that helps (copy_to_huge_pages).
ml_status load_model(Model *m, const char *path, ThreadPool *pool = nullptr, const char *gguf_cache_dir = nullptr,
                     bool map_weights = false);

// Weights in huge pages (ml_options.map_weights): a decode step streams every weight once, and read
// through a file mapping's 4 KiB pages it ran up to a quarter slower than from 2 MiB pages (TinyLlama Q4_0,
// docs/bench.md; the TLB misses a page every 4 KiB and the hardware prefetchers stop at each
// boundary). huge_pages_help: whether copying `bytes` into OwnedBytes pays — the system gives huge
// pages (`thp_enabled`, the text of /sys/kernel/mm/transparent_hugepage/enabled, says [always] or
// [madvise]), the copy is large enough that OwnedBytes asks for them (16 huge pages) and takes at
// most half of `mem_available` (MemAvailable of /proc/meminfo; a model that big stays mapped and
// pageable). copy_to_huge_pages: when `file` is mapped and this holds on this system (Linux; false
// elsewhere), its bytes copied into `owned` (across pool's threads) and `file` made a view of
// them, the mapping let go; false, with nothing changed, otherwise or when the memory cannot be had.
bool huge_pages_help(uint64_t bytes, const char *thp_enabled, uint64_t mem_available);
bool copy_to_huge_pages(FileMap *file, OwnedBytes *owned, ThreadPool *pool);

// The same over a caller's buffer (ml_open_memory, the fuzzers): a .mlb is validated and used in
// place (the buffer must stay alive and unchanged as long as *m; 64-byte aligned, as a mapping is),
// a GGUF converted into m->owned (the buffer is not read afterwards). name is for messages.
ml_status load_model_from_memory(Model *m, const uint8_t *data, uint64_t size, const char *name = "model in memory",
                                 ThreadPool *pool = nullptr);

// Bytes of a tensor's arrays (q and d separately; d = 0 for F32; a scale is 4 bytes, 2 in layout 2).
uint64_t tensor_q_bytes(ml_type t, uint64_t rows, uint64_t cols);
uint64_t tensor_d_bytes(ml_type t, uint64_t rows, uint64_t cols, uint32_t layout);
// The bytes a tensor's arrays hold as loaded (the panel padding rows not counted): what a matrix
// product reads.
uint64_t tensor_bytes(const ml_qtensor &w);

const char *type_name(ml_type t);
const char *arch_name(uint32_t arch);  // "llama", "qwen2", "qwen3"

}  // namespace ml
