// The runtime's tokenizer: one API over two kinds of file, told apart by their first four bytes
// (docs/tokenizer-format.md):
//   - "MLTK": byte-level BPE (runtime/bpe_tokenizer.h), with n_tokens <= the model's vocab; ids in
//     [n_tokens, vocab) decode to empty text and are never produced by encode;
//   - anything else: llama2.c tokenizer.bin: int32 max_token_length, then per token: float32
//     score, int32 length, that many bytes. The file does not store its size; it must hold exactly
//     the model's vocab tokens (or, loaded with vocab 0, as many as it holds). Encoding and
//     decoding follow llama2.c run.c (BOS, dummy-prefix space, greedy best-score merges, <0xXX>
//     byte fallback).
// All memory is allocated at load, except encode's scratch (the token list, a heap of merge
// candidates, for byte-level BPE also a cache of merged pre-tokens), which grows with the texts
// encoded.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/text/bpe_tokenizer.h"
#include "runtime/ml.h"

namespace ml {

class Tokenizer {
 public:
  enum Kind { kLlama2 = 0, kByteLevel = 1 };

  // Parses a tokenizer image (bytes may be hostile) of either kind for a model with `vocab` token
  // ids; vocab 0: a tokenizer on its own (llama2.c: as many tokens as the file holds).
  ml_status load(const uint8_t *data, uint64_t size, int vocab, const char *path);

  // Encodes NUL-terminated UTF-8 text. bos: llama2.c always puts 1 first; byte-level puts bos_id
  // first when the file's add_bos flag is set. special: byte-level only, split special tokens out
  // of the text. When tokens[] is smaller than max_tokens(strlen(text)) (llama2.c) or than the
  // result (byte-level), ML_E_ARG with *n_tokens = a size that suffices.
  ml_status encode(const char *text, bool bos, int *tokens, int max_tokens, int *n_tokens) {
    return encode(text, bos, true, tokens, max_tokens, n_tokens);
  }
  ml_status encode(const char *text, bool bos, bool special, int *tokens, int max_tokens, int *n_tokens);
  size_t max_tokens(size_t text_bytes) const {  // a token buffer this large always suffices
    return kind_ == kByteLevel ? bpe_.max_tokens(text_bytes) : text_bytes + 2;
  }
  // The text of token after prev: NULL outside [0, vocab); byte-level: the token's bytes ("" for
  // absent tokens and ids >= n_tokens), prev unused.
  const char *decode(int prev, int token) const;

  Kind kind() const { return kind_; }
  int vocab() const { return vocab_; }
  int n_tokens() const { return kind_ == kByteLevel ? bpe_.n_tokens() : vocab_; }
  const BpeTokenizer &bpe() const { return bpe_; }  // kind() == kByteLevel only
  BpeTokenizer &bpe_mut() { return bpe_; }
  // llama2.c kind only:
  const char *piece(int id) const { return strings_.data() + offsets_[static_cast<size_t>(id)]; }
  float score(int id) const { return scores_[static_cast<size_t>(id)]; }

 private:
  int lookup(const char *s) const;  // id of an exact piece, or -1
  ml_status load_llama2(const uint8_t *data, uint64_t size, int vocab, const char *path);
  ml_status encode_llama2(const char *text, bool bos, int *tokens, int max_tokens, int *n_tokens);
  const char *decode_llama2(int prev, int token) const;

  Kind kind_ = kLlama2;
  BpeTokenizer bpe_;
  std::vector<int> ids_;           // byte-level encode output before the copy to the caller

  int vocab_ = 0;
  uint32_t max_token_length_ = 0;
  std::vector<float> scores_;
  std::vector<uint32_t> offsets_;  // into strings_, NUL-terminated
  std::vector<char> strings_;
  std::vector<int> sorted_;        // ids sorted by piece (strcmp), ties by id
  std::vector<char> scratch_;      // merge candidate buffer
  struct Pair {                    // a merge candidate: tokens at positions left, right -> id
    float score;
    int left, right, id;
    uint32_t left_version, right_version;  // the positions' versions when it was pushed
  };
  std::vector<int> next_, prev_;   // encode: the token list over positions (-1 ends it)
  std::vector<uint32_t> version_;  // encode: bumped when a position's token changes or leaves
  std::vector<Pair> heap_;         // encode: max-heap of candidates by (score, leftmost)
  char byte_pieces_[512];          // "\xNN\0" for <0xNN>
};

}  // namespace ml
