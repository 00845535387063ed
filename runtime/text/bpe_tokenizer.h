// Byte-level BPE tokenizer (GPT-2 style: Qwen2, SmolLM2, Llama 3, GPT-2) read from an `MLTK`
// version 1 image (docs/tokenizer-format.md, the contract this file implements).
//
// load():   validates every field of possibly hostile bytes before use (one line naming the field
//           on failure, ML_E_FORMAT; ML_E_NOMEM if the tables cannot be allocated). Everything the
//           tokenizer keeps is allocated here: the token bytes, a bytes -> id table of the kind-0
//           tokens, a (left, right) -> (rank, result) merge table, the special/added token index.
// encode(): UTF-8 validation -> added tokens (kind 2) split out always and special tokens
//           (kind 1) when `special` -> each piece of text between them: NFC when declared ->
//           pre-tokenizer (runtime/pretokenize.h) -> BPE
//           of each pre-token by merge rank (leftmost among equal ranks) with a heap over a linked
//           list, O(m log m) for a pre-token of m bytes -> BOS first when asked and the file's
//           add_bos flag is set. Scratch (the output list, the heap, a cache of pre-tokens already
//           merged) grows with the texts encoded and is the only memory encode allocates.
// decode(): a token's bytes; absent tokens (kind 3) and ids >= n_tokens are empty.
// No function throws or aborts: allocation failures are ML_E_NOMEM.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/ml.h"
#include "runtime/text/pretokenize.h"

namespace ml {

class BpeTokenizer {
 public:
  enum Kind : uint8_t { kNormal = 0, kSpecial = 1, kAdded = 2, kAbsent = 3 };
  static constexpr uint32_t kMaxTokens = 1u << 24;
  static constexpr uint32_t kMaxStop = 64;
  static constexpr uint32_t kMaxTemplate = 1u << 20;

  // True when the image starts with the MLTK magic (the loader's test of the file kind).
  static bool is_mltk(const uint8_t *data, uint64_t size);

  // Parses and validates an MLTK image; `path` names the file in errors.
  ml_status load(const uint8_t *data, uint64_t size, const char *path);

  // Encodes NUL-terminated UTF-8 text into *out (replaced). bos: put bos_id first when the file's
  // add_bos flag is set; special: split special (kind 1) tokens out of the text.
  ml_status encode(const char *text, bool bos, bool special, std::vector<int> *out);
  // The same for text[0..n) that may hold NUL bytes (text[n] must be NUL).
  ml_status encode(const char *text, size_t n, bool bos, bool special, std::vector<int> *out);
  // An upper bound of encode's token count for a text of `bytes` bytes (NFC may lengthen UTF-8
  // text at most 3x; every token holds at least one byte; one BOS).
  size_t max_tokens(size_t bytes) const { return (normalizer_ == 1 ? 3 * bytes : bytes) + 1; }

  // The bytes of a token (NUL-terminated copy; `len` excludes the NUL and may count embedded NULs).
  const char *decode(int id, size_t *len = nullptr) const;

  int n_tokens() const { return n_tokens_; }
  int kind(int id) const { return kinds_[size_t(id)]; }
  int bos_id() const { return bos_id_; }
  int eos_id() const { return eos_id_; }
  int eot_id() const { return eot_id_; }
  int pad_id() const { return pad_id_; }
  bool add_bos() const { return (flags_ & 1) != 0; }
  bool ignore_merges() const { return (flags_ & 2) != 0; }
  int pretokenizer() const { return pretok_; }
  int normalizer() const { return normalizer_; }
  // eos, eot and the file's stop ids, each once, in that order.
  const std::vector<int> &stop_ids() const { return stops_; }
  const std::string &chat_template() const { return template_; }
  int n_merges() const { return int(merge_left_.size()); }
  // Merge rule i (rank order): left, right -> result.
  void merge(int i, int *left, int *right, int *result) const {
    *left = merge_left_[size_t(i)], *right = merge_right_[size_t(i)], *result = merge_result_[size_t(i)];
  }
  int lookup_normal(const char *s, size_t n) const;   // kind-0 id with these bytes, or -1
  int merge_rank(int left, int right, int *result) const;  // rank of the rule, or -1

 private:
  ml_status load_impl(const uint8_t *data, uint64_t size, const char *path);
  void bpe(const char *s, size_t n, std::vector<int> *out);  // one pre-token, appended
  ml_status encode_plain(const char *s, size_t n, std::vector<int> *out);  // pre-tokenize + BPE

  int n_tokens_ = 0;
  uint8_t pretok_ = 0, normalizer_ = 0, flags_ = 0;
  int bos_id_ = -1, eos_id_ = -1, eot_id_ = -1, pad_id_ = -1;
  std::vector<uint8_t> kinds_;
  std::vector<uint32_t> offsets_;   // n_tokens + 1 offsets into bytes_; token i's NUL at offsets_[i+1]-1
  std::vector<char> bytes_;
  std::vector<uint32_t> hash_ids_;  // open addressing: kind-0 id + 1, 0 empty (size a power of 2)
  struct MergeSlot {
    uint64_t key;    // left << 32 | right; ~0 empty
    uint32_t rank;
    int32_t result;
  };
  std::vector<MergeSlot> merges_;   // open addressing (size a power of 2)
  std::vector<int32_t> merge_left_, merge_right_, merge_result_;
  int byte_id_[256] = {};
  std::vector<int> specials_;       // kind 1/2 ids, by first byte then longest first
  uint32_t special_first_[257] = {};  // specials_ range of each first byte
  std::vector<int> stops_;
  std::string template_;

  // encode scratch
  std::string norm_;
  std::vector<std::pair<size_t, size_t>> pieces_;
  struct Sym {
    int id, prev, next;
  };
  std::vector<Sym> syms_;
  struct Cand {
    uint32_t rank, pos;
    int left, right, result;
  };
  std::vector<Cand> heap_;
  struct CacheEntry {
    uint32_t key_off, key_len, tok_off, tok_len;
  };
  std::unordered_map<uint64_t, CacheEntry> cache_;
  std::string cache_keys_;
  std::vector<int> cache_toks_;
};

}  // namespace ml
