#include "runtime/text/tokenizer.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "kernels/mutants.h"
#include "runtime/base.h"
#include "runtime/error.h"
#include "runtime/text/unicode.h"

namespace ml {

ml_status Tokenizer::load_llama2(const uint8_t *data, uint64_t size, int vocab, const char *path) {
  if (size < 4) return fail(ML_E_FORMAT, "tokenizer %s is %llu bytes, too short for its header", path,
                            static_cast<unsigned long long>(size));
  const int32_t mtl = rd_i32(data);
  if (mtl < 1 || mtl > 4096)
    return fail(ML_E_FORMAT, "tokenizer %s: max_token_length = %d is out of range [1, 4096]", path, mtl);
  max_token_length_ = static_cast<uint32_t>(mtl);
  vocab_ = vocab;
  scores_.resize(static_cast<size_t>(vocab));
  offsets_.resize(static_cast<size_t>(vocab));
  strings_.clear();
  strings_.reserve(static_cast<size_t>(std::min<uint64_t>(size, uint64_t(1) << 30)));
  uint64_t off = 4;
  for (int i = 0; i < vocab; ++i) {
    if (size - off < 8)
      return fail(ML_E_FORMAT,
                  "tokenizer %s ends after %d tokens but the model's vocab is %d: they do not belong together",
                  path, i, vocab);
    std::memcpy(&scores_[static_cast<size_t>(i)], data + off, 4);
    const int32_t len = rd_i32(data + off + 4);
    off += 8;
    if (len < 0 || static_cast<uint32_t>(len) > max_token_length_)
      return fail(ML_E_FORMAT, "tokenizer %s: token %d has length %d, outside [0, max_token_length = %u]",
                  path, i, len, max_token_length_);
    if (size - off < static_cast<uint64_t>(len))
      return fail(ML_E_FORMAT, "tokenizer %s: token %d's %d bytes run past the end of the file", path, i, len);
    offsets_[static_cast<size_t>(i)] = static_cast<uint32_t>(strings_.size());
    strings_.insert(strings_.end(), data + off, data + off + len);
    strings_.push_back('\0');
    off += static_cast<uint64_t>(len);
  }
  if (off != size)
    return fail(ML_E_FORMAT,
                "tokenizer %s has %llu bytes after the model's %d tokens: it has a larger vocabulary than the model",
                path, static_cast<unsigned long long>(size - off), vocab);
  sorted_.resize(static_cast<size_t>(vocab));
  for (int i = 0; i < vocab; ++i) sorted_[static_cast<size_t>(i)] = i;
  std::sort(sorted_.begin(), sorted_.end(), [this](int a, int b) {
    const int c = std::strcmp(piece(a), piece(b));
    return c != 0 ? c < 0 : a < b;
  });
  scratch_.assign(2 * max_token_length_ + 8, '\0');
  for (int b = 0; b < 256; ++b) {
    byte_pieces_[2 * b] = static_cast<char>(b);
    byte_pieces_[2 * b + 1] = '\0';
  }
  return ML_OK;
}

int Tokenizer::lookup(const char *s) const {
  auto it = std::lower_bound(sorted_.begin(), sorted_.end(), s,
                             [this](int id, const char *key) { return std::strcmp(piece(id), key) < 0; });
  if (it != sorted_.end() && std::strcmp(piece(*it), s) == 0) return *it;
  return -1;
}

ml_status Tokenizer::encode_llama2(const char *text, bool bos, int *tokens, int max_tokens, int *n_tokens) {
  if (text == nullptr) return fail(ML_E_ARG, "encode: text is NULL");
  size_t bad = 0;
  if (!unicode::valid_utf8(text, std::strlen(text), &bad)) return fail(ML_E_ARG, "prompt is not valid UTF-8 (byte %zu)", bad);
  const size_t len = std::strlen(text);
  if (max_tokens < 0 || static_cast<size_t>(max_tokens) < len + 2)
    return fail(ML_E_ARG, "encode: token buffer of %d entries is too small, %zu needed", max_tokens, len + 2);
  int n = 0;
  // Pushes the pieces of one UTF-8 character (or the dummy prefix): its own token, else byte tokens.
  auto push_piece = [&](const char *s, size_t slen) -> ml_status {
    const int id = lookup(s);
    if (id >= 0) {
      tokens[n++] = id;
      return ML_OK;
    }
    for (size_t i = 0; i < slen; ++i) {
      const int b = static_cast<unsigned char>(s[i]) + 3;  // <0x00> is token 3 in llama2.c vocabularies
      if (b >= vocab_)
        return fail(ML_E_ARG, "cannot encode byte 0x%02x: the tokenizer has no byte-fallback token for it",
                    b - 3);
      tokens[n++] = b;
    }
    return ML_OK;
  };
  if (bos) {
    if (vocab_ < 2) return fail(ML_E_ARG, "cannot add BOS (token 1): the vocabulary has only %d token", vocab_);
    tokens[n++] = 1;
  }
  if (text[0] != '\0')
    if (const ml_status s = push_piece(" ", 1)) return s;
  char cp[5];
  size_t cp_len = 0;
  for (const char *c = text; *c; ++c) {
    cp[cp_len++] = *c;
    cp[cp_len] = '\0';
    if ((c[1] & 0xC0) == 0x80 && cp_len < 4) continue;  // more continuation bytes follow
    if (const ml_status s = push_piece(cp, cp_len)) return s;
    cp_len = 0;
  }
  // Merge the best-scoring adjacent pair until none is in the vocabulary, as llama2.c does (the
  // leftmost of equal scores first; a pair scoring <= -1e10, or NaN, never merges). llama2.c
  // rescans every pair per merge, O(n^2): a 100 KB prompt took minutes. Here the candidate pairs
  // sit in a max-heap ordered by (score, leftmost) over a linked list of the tokens, and a
  // position's version number invalidates its stale pairs: O(n log n), the same merges.
  if (n < 2) {
    *n_tokens = n;
    return ML_OK;
  }
  try {
    next_.resize(static_cast<size_t>(n));
    prev_.resize(static_cast<size_t>(n));
    version_.assign(static_cast<size_t>(n), 0);
    heap_.clear();
    heap_.reserve(static_cast<size_t>(n) * 3);  // n - 1 pairs, then at most 2 new ones per merge
  } catch (const std::bad_alloc &) {
    return fail(ML_E_NOMEM, "cannot allocate the encoder's scratch for %d tokens", n);
  }
  for (int i = 0; i < n; ++i) {
    next_[static_cast<size_t>(i)] = i + 1 < n ? i + 1 : -1;
    prev_[static_cast<size_t>(i)] = i - 1;
  }
  // A candidate beats another with a higher score, or the same score further left.
  auto lower = [](const Pair &a, const Pair &b) {
    return a.score < b.score || (a.score == b.score && (ML_MUTANT("bpe_priority") ? a.left < b.left : a.left > b.left));
  };  // (mutant bpe_priority: the rightmost of equal scores first)
  char *buf = scratch_.data();
  auto push_pair = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const char *a = piece(tokens[left]), *b = piece(tokens[right]);
    const size_t la = std::strlen(a), lb = std::strlen(b);
    if (la + lb > max_token_length_) return;  // no piece is that long
    std::memcpy(buf, a, la);
    std::memcpy(buf + la, b, lb + 1);
    const int id = lookup(buf);
    if (id < 0) return;
    const float score = scores_[static_cast<size_t>(id)];
    if (!(score > -1e10f)) return;
    heap_.push_back({score, left, right, id, version_[static_cast<size_t>(left)], version_[static_cast<size_t>(right)]});
    std::push_heap(heap_.begin(), heap_.end(), lower);
  };
  for (int i = 0; i + 1 < n; ++i) push_pair(i, i + 1);
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), lower);
    const Pair p = heap_.back();
    heap_.pop_back();
    const size_t l = static_cast<size_t>(p.left), r = static_cast<size_t>(p.right);
    if (version_[l] != p.left_version || version_[r] != p.right_version) continue;  // stale
    // Merge: the left position takes the new token, the right one leaves the list.
    tokens[p.left] = p.id;
    ++version_[l];
    ++version_[r];
    const int after = next_[r];
    next_[l] = after;
    if (after >= 0) prev_[static_cast<size_t>(after)] = p.left;
    push_pair(prev_[l], p.left);
    push_pair(p.left, after);
  }
  int out = 0;
  for (int i = 0; i >= 0; i = next_[static_cast<size_t>(i)]) tokens[out++] = tokens[i];
  n = out;
  *n_tokens = n;
  return ML_OK;
}

const char *Tokenizer::decode_llama2(int prev, int token) const {
  if (token < 0 || token >= vocab_) return nullptr;
  const char *p = piece(token);
  if (prev == 1 && p[0] == ' ') ++p;  // after BOS, sentencepiece drops the leading space
  // <0xXX> byte tokens decode to the raw byte
  if (p[0] == '<' && p[1] == '0' && p[2] == 'x' && p[3] && p[4] && p[5] == '>' && p[6] == '\0') {
    auto hex = [](char ch) {
      return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
    };
    const int hi = hex(p[3]), lo = hex(p[4]);
    if (hi >= 0 && lo >= 0) return byte_pieces_ + 2 * (hi * 16 + lo);
  }
  return p;
}

// ---- The two kinds behind one API (runtime/tokenizer.h).

ml_status Tokenizer::load(const uint8_t *data, uint64_t size, int vocab, const char *path) {
  if (vocab < 0) return fail(ML_E_ARG, "tokenizer %s: vocab %d is negative", path, vocab);
  if (BpeTokenizer::is_mltk(data, size)) {
    kind_ = kByteLevel;
    if (const ml_status s = bpe_.load(data, size, path)) return s;
    if (vocab > 0 && bpe_.n_tokens() > vocab)
      return fail(ML_E_FORMAT,
                  "tokenizer %s has %d tokens but the model's vocab is %d: they do not belong together", path,
                  bpe_.n_tokens(), vocab);
    vocab_ = vocab > 0 ? vocab : bpe_.n_tokens();
    return ML_OK;
  }
  kind_ = kLlama2;
  bpe_ = BpeTokenizer();
  if (vocab == 0) {  // a tokenizer on its own: count the tokens the file holds
    if (size < 4) return load_llama2(data, size, 1, path);
    const int32_t mtl = rd_i32(data);
    if (mtl < 1 || mtl > 4096) return load_llama2(data, size, 1, path);  // reports max_token_length
    uint64_t off = 4;
    while (size - off >= 8 && vocab < (1 << 24)) {
      const int32_t len = rd_i32(data + off + 4);
      if (len < 0 || len > mtl || size - off - 8 < static_cast<uint64_t>(len)) break;
      off += 8 + static_cast<uint64_t>(len);
      ++vocab;
    }
    if (off != size)
      return fail(ML_E_FORMAT, "tokenizer %s: token %d (at byte %llu) is truncated or has a bad length", path, vocab,
                  static_cast<unsigned long long>(off));
    if (vocab == 0) return fail(ML_E_FORMAT, "tokenizer %s holds no token", path);
  }
  try {
    return load_llama2(data, size, vocab, path);
  } catch (const std::bad_alloc &) {
    return fail(ML_E_NOMEM, "tokenizer %s: cannot allocate its tables for %d tokens", path, vocab);
  }
}

ml_status Tokenizer::encode(const char *text, bool bos, bool special, int *tokens, int max_tokens, int *n_tokens) {
  if (text == nullptr) return fail(ML_E_ARG, "encode: text is NULL");
  if (kind_ == kLlama2) {
    const size_t need = std::strlen(text) + 2;
    if (max_tokens < 0 || static_cast<size_t>(max_tokens) < need) {
      *n_tokens = need > size_t(INT32_MAX) ? INT32_MAX : static_cast<int>(need);
      return fail(ML_E_ARG, "encode: token buffer of %d entries is too small, %zu needed", max_tokens, need);
    }
    return encode_llama2(text, bos, tokens, max_tokens, n_tokens);
  }
  if (const ml_status s = bpe_.encode(text, bos, special, &ids_)) return s;
  if (ids_.size() > size_t(INT32_MAX)) return fail(ML_E_ARG, "encode: %zu tokens do not fit an int", ids_.size());
  if (max_tokens < 0 || static_cast<size_t>(max_tokens) < ids_.size()) {
    *n_tokens = static_cast<int>(ids_.size());
    return fail(ML_E_ARG, "encode: token buffer of %d entries is too small, %zu needed", max_tokens, ids_.size());
  }
  if (!ids_.empty()) std::memcpy(tokens, ids_.data(), ids_.size() * sizeof(int));
  *n_tokens = static_cast<int>(ids_.size());
  return ML_OK;
}

const char *Tokenizer::decode(int prev, int token) const {
  if (token < 0 || token >= vocab_) return nullptr;
  return kind_ == kByteLevel ? bpe_.decode(token) : decode_llama2(prev, token);
}

}  // namespace ml
