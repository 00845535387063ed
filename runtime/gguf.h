// GGUF (llama.cpp's model file, versions 2 and 3, little-endian) read by the runtime itself, so
// `ml_open("model.gguf", NULL, ...)` runs the file a user downloaded as it is.
//
// Two parts:
//  - GgufFile: the container. parse() validates every field of possibly hostile bytes before use
//    (header counts against the file size, every metadata value and array length, tensor names,
//    dimensions, type ids, offsets: aligned, inside the data section, not overlapping) and names
//    the offending field in its one-line error (ML_E_FORMAT). Nothing it allocates is larger than
//    the file: metadata values are views into the bytes, read on demand.
//  - load_gguf(): a GgufFile as a Model (runtime/model.h) of architecture llama or qwen2: the
//    metadata checked against the tensors, every weight converted into one owned 64-byte-aligned
//    buffer in the runtime's layouts (Q8_0 and Q4_0 matrices repacked into 16-row panels, their
//    binary16 scales widened exactly; F32/F16/BF16 matrices and vectors as float32, exactly),
//    split across the pool's threads; the tokenizer in the metadata ('llama' SentencePiece →
//    llama2.c tokenizer.bin image, 'gpt2' byte-level BPE → MLTK image, docs/tokenizer-format.md)
//    kept in Model::tokenizer_image for ml_open. The mapping is the same as tools/gguf.py's
//    (tested: a GGUF run directly gives the bits of the .mlb convert.py makes of it).
// Tensor types other than F32, F16, BF16, Q8_0 and Q4_0 are refused at load with one line naming
// the tensor, its type and the supported types (docs/import.md).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/ml.h"

namespace ml {

struct Config;
struct Model;
class ThreadPool;

// ggml's tensor type ids (ggml.h) and their blocks: elements per block and bytes per block
// (0 for ids ggml no longer defines).
struct GgmlType {
  const char *name;
  uint32_t block, bytes;
};
const GgmlType *ggml_type(uint32_t id);  // nullptr past the table
enum : uint32_t {
  kGgmlF32 = 0, kGgmlF16 = 1, kGgmlQ4_0 = 2, kGgmlQ4_1 = 3, kGgmlQ5_0 = 6, kGgmlQ5_1 = 7, kGgmlQ8_0 = 8,
  kGgmlQ3_K = 11, kGgmlQ4_K = 12, kGgmlQ5_K = 13, kGgmlQ6_K = 14, kGgmlBF16 = 30
};

class GgufFile {
 public:
  enum ValueType : uint32_t { kU8, kI8, kU16, kI16, kU32, kI32, kF32, kBool, kString, kArray, kU64, kI64, kF64 };
  struct Kv {
    std::string key;
    uint32_t type;        // ValueType
    uint64_t off;         // the value's bytes (for an array: its first item)
    uint32_t item = 0;    // arrays: the item type
    uint64_t count = 0;   // arrays: the item count
  };
  struct Tensor {
    std::string name;
    uint32_t n_dims;
    uint64_t ne[4];       // ne[0] = the contiguous dimension (columns)
    uint32_t type;
    uint64_t off;         // into the data section
    uint64_t bytes;
    uint64_t rows() const { return ne[1] * ne[2] * ne[3]; }
    uint64_t elements() const { return ne[0] * rows(); }
  };

  // Validates the container (data: the whole file, `path` for messages). A streamed file: data
  // holds its first `avail` bytes of `size`; when the header (metadata and tensor table) runs past
  // them, header_short() says so (ML_E_FORMAT then; parse again with more). Tensor bytes are only
  // read through tensor_data(), by the caller.
  ml_status parse(const uint8_t *data, uint64_t size, const char *path, uint64_t avail = UINT64_MAX);
  bool header_short() const { return header_short_; }
  uint64_t data_offset() const { return data_off_; }  // where the data section starts
  void moved_to(const uint8_t *data) { data_ = data; }  // the parsed bytes now there (a copy: GgufStream's header)

  uint32_t version() const { return version_; }
  const std::vector<Kv> &metadata() const { return kv_; }
  const std::vector<Tensor> &tensors() const { return tensors_; }
  const Kv *find(const char *key) const;
  const Tensor *tensor(const std::string &name) const;
  const uint8_t *tensor_data(const Tensor &t) const { return data_ + data_off_ + t.off; }
  uint64_t size() const { return size_; }
  const char *path() const { return path_; }

  // Typed reads; each names the key and what it expected on failure. *found = false (and ML_OK)
  // when the key is absent, where a found argument is given; else absence is an error.
  ml_status get_int(const char *key, int64_t *v, bool *found = nullptr) const;
  ml_status get_float(const char *key, double *v, bool *found = nullptr) const;
  ml_status get_bool(const char *key, bool *v, bool *found = nullptr) const;
  ml_status get_string(const char *key, std::string *v, bool *found = nullptr) const;
  // Arrays: strings (each a view: pointer, length) and numbers (as int64 / double).
  ml_status get_strings(const char *key, std::vector<std::pair<const char *, uint64_t>> *v, bool *found = nullptr) const;
  ml_status get_ints(const char *key, std::vector<int64_t> *v, bool *found = nullptr) const;
  ml_status get_floats(const char *key, std::vector<float> *v, bool *found = nullptr) const;

 private:
  const Kv *need(const char *key, bool *found, ml_status *s, bool (*ok)(const Kv &), const char *what) const;
  const uint8_t *data_ = nullptr;
  uint64_t size_ = 0, data_off_ = 0;
  uint32_t version_ = 0;
  bool header_short_ = false;
  const char *path_ = "";
  std::vector<Kv> kv_;
  std::vector<Tensor> tensors_;
};

bool is_gguf(const uint8_t *data, uint64_t size);

// A name from the file (a key, a tensor name, a string value) as an error message shows it: control
// bytes and backslashes as \xNN, at most 64 bytes then "...", so the message stays one line.
std::string gguf_printable(const std::string &s);

// Fills *m (cfg, tensor views, the tokenizer image or why there is none, the load note) from the
// GGUF bytes and points m->file at the converted weights; pool may be nullptr (one thread).
//
// cache_dir (nullptr: no cache) keeps the converted weights in
// cache_dir/<file name>.<key>.mlcache so the next start maps them instead of converting: a
// 4096-byte header ("MLC1", u32 version 1, u64 key, u64 the weights' bytes, u32 shared classifier),
// then the weights as the conversion lays them out. The key is a hash of the GGUF's size, its first
// and last MiB and 4 KiB of every 16 MiB (so a changed file misses). Everything else — metadata,
// shapes, the layout plan, the tokenizer — is still read and validated from the GGUF itself, so a
// cache file only ever supplies weight bytes at offsets the GGUF's validated plan gives; one of
// another key, size or version is not used (and is rewritten). A cache that cannot be written is
// said in the load note, not an error.
// A cache used is copied into huge pages unless map_weights (copy_to_huge_pages, runtime/model.h).
ml_status load_gguf(Model *m, const uint8_t *data, uint64_t size, const char *path, ThreadPool *pool,
                    const char *cache_dir = nullptr, bool map_weights = false);

// A GGUF converted while its bytes arrive (the browser's download, wasm/loader_api.cc), so the file is
// never whole in memory: begin() plans the model from the header with load_gguf's validation and
// mapping and allocates the converted weights; feed() takes the file's bytes in order and converts each
// tensor as its bytes complete, holding besides at most one unit of it: 16 rows of a quantized matrix,
// a row of a float one, or the whole tensor for a vector and for qwen's q/k matrices (their rows are
// permuted within a head); finish() checks that every byte came and hands over the model
// (ml_open_streamed opens a context on it). The converted bytes are load_gguf's (tested). Unlike
// load_gguf: one thread; no cache; an output.weight with the embedding's type and shape (llama2.c
// conversions store the shared one twice) is converted into a buffer of its own (Model::classifier) and
// compared with the converted embedding once both are in: equal, the buffer is let go and the embedding
// shared, as load_gguf decides from the file; else it stays (load_gguf puts it last in the one buffer).
// So such a file briefly holds that tensor twice.
class GgufStream {
 public:
  GgufStream();
  ~GgufStream();
  // head: the file's first n bytes; size: the whole file's; name for messages. ML_OK: planned and
  // the weights allocated (weight_bytes()). When the header runs past n bytes: ML_E_FORMAT and
  // *more = true; call again with more of the file. Any other error is the file's (*more = false).
  ml_status begin(const uint8_t *head, uint64_t n, uint64_t size, const char *name, bool *more);
  ml_status feed(const uint8_t *p, uint64_t n);  // the file's next n bytes (the first call: from byte 0)
  ml_status finish(Model *m);                    // all `size` bytes fed: *m takes the model
  uint64_t weight_bytes() const;                 // the converted weights (after begin)
  const Config *config() const;                  // the model's (after begin; nullptr before)
  uint64_t fed() const;

 private:
  struct Impl;
  Impl *impl_ = nullptr;
};

// ml_open_memory's counterpart for a GgufStream whose bytes have all been fed (runtime/api.cc): the
// context takes its model; the stream is then empty.
ml_status ml_open_streamed(ml_ctx **out, GgufStream *stream, const char *name, const char *tokenizer_path,
                           const ml_options *opts);

// Only the tokenizer image of a GGUF (ml_tokenize): *image empty and *missing saying why when the
// file has no tokenizer the runtime reads.
ml_status gguf_tokenizer_image(const uint8_t *data, uint64_t size, const char *path, std::vector<uint8_t> *image,
                               std::string *missing);

}  // namespace ml
