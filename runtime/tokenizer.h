// llama2.c tokenizer.bin: int32 max_token_length, then per token: float32 score, int32 length,
// that many bytes. The file does not store its size; it must hold exactly the model's vocab tokens.
// Encoding and decoding follow llama2.c run.c (BOS, dummy-prefix space, greedy best-score merges,
// <0xXX> byte fallback). All memory is allocated at load, except encode's scratch (a list and a
// heap of merge candidates, O(strlen(text))), which grows to the longest text encoded so far.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/ml.h"

namespace ml {

class Tokenizer {
 public:
  // Parses a tokenizer.bin image (bytes may be hostile) for a model with `vocab` tokens.
  ml_status load(const uint8_t *data, uint64_t size, int vocab, const char *path);

  // tokens must have room for strlen(text) + 2 entries (see ml_encode).
  ml_status encode(const char *text, bool bos, int *tokens, int max_tokens, int *n_tokens);
  const char *decode(int prev, int token) const;

  int vocab() const { return vocab_; }
  const char *piece(int id) const { return strings_.data() + offsets_[static_cast<size_t>(id)]; }
  float score(int id) const { return scores_[static_cast<size_t>(id)]; }

 private:
  int lookup(const char *s) const;  // id of an exact piece, or -1

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

// True when s is valid UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool valid_utf8(const char *s, size_t *bad_offset);

}  // namespace ml
