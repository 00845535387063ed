#include "runtime/text/bpe_tokenizer.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "kernels/mutants.h"
#include "runtime/base.h"
#include "runtime/error.h"
#include "runtime/text/tokenizer.h"
#include "runtime/text/unicode.h"

namespace ml {

namespace {

uint64_t hash_bytes(const char *s, size_t n) {  // FNV-1a over 8-byte words, then a final mix
  uint64_t h = 0xcbf29ce484222325ull ^ n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, s + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  uint64_t w = 0;
  for (size_t k = 0; i < n; ++i, ++k) w |= uint64_t(static_cast<unsigned char>(s[i])) << (8 * k);
  h = (h ^ w) * 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 32);
}

uint64_t mix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  return k;
}

size_t pow2_at_least(size_t n) {
  size_t c = 16;
  while (c < n) c <<= 1;
  return c;
}

const char *const kKindName[] = {"normal", "special", "added", "absent"};

}  // namespace

bool BpeTokenizer::is_mltk(const uint8_t *data, uint64_t size) {
  return size >= 4 && std::memcmp(data, "MLTK", 4) == 0;
}

ml_status BpeTokenizer::load(const uint8_t *data, uint64_t size, const char *path) {
  try {
    return load_impl(data, size, path);
  } catch (const std::bad_alloc &) {
    return fail(ML_E_NOMEM, "tokenizer %s: cannot allocate its tables (%llu-byte file)", path,
                static_cast<unsigned long long>(size));
  }
}

ml_status BpeTokenizer::load_impl(const uint8_t *data, uint64_t size, const char *path) {
  *this = BpeTokenizer();
  if (size < 64)
    return fail(ML_E_FORMAT, "tokenizer %s is %llu bytes, too short for the 64-byte MLTK header", path,
                static_cast<unsigned long long>(size));
  if (!is_mltk(data, size)) return fail(ML_E_FORMAT, "tokenizer %s: magic is not \"MLTK\"", path);
  const uint32_t version = rd_u32(data + 4);
  if (version != 1)
    return fail(ML_E_FORMAT, "tokenizer %s: version %u is not supported (this runtime reads MLTK version 1)", path,
                version);
  const uint32_t n_tokens = rd_u32(data + 8), n_merges = rd_u32(data + 12);
  if (n_tokens < 1 || n_tokens > kMaxTokens)
    return fail(ML_E_FORMAT, "tokenizer %s: n_tokens = %u is out of range [1, %u]", path, n_tokens, kMaxTokens);
  const uint64_t body = size - 64;
  if (uint64_t(n_tokens) * 3 > body)
    return fail(ML_E_FORMAT, "tokenizer %s: n_tokens = %u needs at least %llu bytes, the file has %llu after its header",
                path, n_tokens, static_cast<unsigned long long>(uint64_t(n_tokens) * 3),
                static_cast<unsigned long long>(body));
  if (uint64_t(n_merges) * 12 > body)
    return fail(ML_E_FORMAT, "tokenizer %s: n_merges = %u needs %llu bytes, the file has %llu after its header", path,
                n_merges, static_cast<unsigned long long>(uint64_t(n_merges) * 12),
                static_cast<unsigned long long>(body));
  pretok_ = data[16];
  normalizer_ = data[17];
  flags_ = data[18];
  if (pretok_ >= kPreTokenizerCount)
    return fail(ML_E_FORMAT, "tokenizer %s: pretokenizer = %u is not 0 gpt2, 1 llama3, 2 qwen2 or 3 smollm", path,
                pretok_);
  if (normalizer_ > 1) return fail(ML_E_FORMAT, "tokenizer %s: normalizer = %u is not 0 none or 1 NFC", path, normalizer_);
  if (flags_ & ~3u)
    return fail(ML_E_FORMAT, "tokenizer %s: flags = 0x%02x has bits other than add_bos (1) and ignore_merges (2)",
                path, flags_);
  if (data[19] != 0) return fail(ML_E_FORMAT, "tokenizer %s: reserved byte 19 is %u, not 0", path, data[19]);
  const char *const id_names[] = {"bos_id", "eos_id", "eot_id", "pad_id"};
  int *const id_fields[] = {&bos_id_, &eos_id_, &eot_id_, &pad_id_};
  for (int k = 0; k < 4; ++k) {
    const int32_t v = rd_i32(data + 20 + 4 * k);
    if (v != -1 && (v < 0 || uint32_t(v) >= n_tokens))
      return fail(ML_E_FORMAT, "tokenizer %s: %s = %d is neither -1 nor in [0, n_tokens = %u)", path, id_names[k], v,
                  n_tokens);
    *id_fields[k] = v;
  }
  const uint32_t n_stop = rd_u32(data + 36), template_bytes = rd_u32(data + 40);
  if (n_stop > kMaxStop) return fail(ML_E_FORMAT, "tokenizer %s: n_stop = %u is more than %u", path, n_stop, kMaxStop);
  if (template_bytes > kMaxTemplate)
    return fail(ML_E_FORMAT, "tokenizer %s: template_bytes = %u is more than %u", path, template_bytes, kMaxTemplate);
  for (int k = 44; k < 64; ++k)
    if (data[k] != 0) return fail(ML_E_FORMAT, "tokenizer %s: reserved header byte %d is %u, not 0", path, k, data[k]);
  n_tokens_ = int(n_tokens);

  // Tokens.
  uint64_t off = 64;
  kinds_.resize(n_tokens);
  offsets_.resize(size_t(n_tokens) + 1);
  bytes_.reserve(static_cast<size_t>(std::min<uint64_t>(size, uint64_t(1) << 31)) + n_tokens);
  for (uint32_t i = 0; i < n_tokens; ++i) {
    if (size - off < 3) return fail(ML_E_FORMAT, "tokenizer %s: token %u's kind and length run past the end of the file", path, i);
    const uint8_t kind = data[off];
    const uint32_t len = uint32_t(data[off + 1]) | uint32_t(data[off + 2]) << 8;
    off += 3;
    if (kind > kAbsent)
      return fail(ML_E_FORMAT, "tokenizer %s: token %u's kind %u is not 0 normal, 1 special, 2 added or 3 absent", path,
                  i, kind);
    if (kind == kAbsent && len != 0)
      return fail(ML_E_FORMAT, "tokenizer %s: token %u is absent (kind 3) but its length is %u, not 0", path, i, len);
    if (kind != kAbsent && len == 0)
      return fail(ML_E_FORMAT, "tokenizer %s: token %u (%s) has length 0; only absent tokens (kind 3) are empty", path,
                  i, kKindName[kind]);
    if (size - off < len)
      return fail(ML_E_FORMAT, "tokenizer %s: token %u's %u bytes run past the end of the file", path, i, len);
    if (bytes_.size() + len + 1 > UINT32_MAX)
      return fail(ML_E_FORMAT, "tokenizer %s: token %u: the tokens hold more than 4 GB", path, i);
    kinds_[i] = kind;
    offsets_[i] = uint32_t(bytes_.size());
    bytes_.insert(bytes_.end(), data + off, data + off + len);
    bytes_.push_back('\0');
    off += len;
    if (kind == kSpecial || kind == kAdded) {
      size_t bad = 0;
      if (!unicode::valid_utf8(bytes_.data() + offsets_[i], len, &bad))
        return fail(ML_E_FORMAT, "tokenizer %s: token %u (%s) is not valid UTF-8 (byte %zu)", path, i, kKindName[kind],
                    bad);
    }
  }
  offsets_[n_tokens] = uint32_t(bytes_.size());

  // Kind-0 tokens: a bytes -> id table; no two alike; every single byte present.
  std::fill(std::begin(byte_id_), std::end(byte_id_), -1);
  hash_ids_.assign(pow2_at_least(size_t(n_tokens) * 2), 0);
  const size_t hmask = hash_ids_.size() - 1;
  for (uint32_t i = 0; i < n_tokens; ++i) {
    if (kinds_[i] != kNormal) continue;
    size_t len = 0;
    const char *b = decode(int(i), &len);
    size_t h = size_t(hash_bytes(b, len)) & hmask;
    while (hash_ids_[h] != 0) {
      const int other = int(hash_ids_[h]) - 1;
      size_t olen = 0;
      const char *ob = decode(other, &olen);
      if (olen == len && std::memcmp(ob, b, len) == 0)
        return fail(ML_E_FORMAT, "tokenizer %s: token %u (normal) has the same bytes as token %d", path, i, other);
      h = (h + 1) & hmask;
    }
    hash_ids_[h] = i + 1;
    if (len == 1) byte_id_[static_cast<unsigned char>(b[0])] = int(i);
  }
  for (int c = 0; c < 256; ++c)
    if (byte_id_[c] < 0)
      return fail(ML_E_FORMAT, "tokenizer %s: no normal (kind 0) token is the single byte 0x%02x (every byte needs one)",
                  path, c);

  // Merges: all three ids kind 0, result = left || right, each pair once.
  if (size - off < uint64_t(n_merges) * 12)
    return fail(ML_E_FORMAT, "tokenizer %s: the %u merges (%llu bytes) run past the end of the file", path, n_merges,
                static_cast<unsigned long long>(uint64_t(n_merges) * 12));
  merges_.assign(pow2_at_least(size_t(n_merges) * 2), MergeSlot{~0ull, 0, 0});
  merge_left_.resize(n_merges);
  merge_right_.resize(n_merges);
  merge_result_.resize(n_merges);
  const size_t mmask = merges_.size() - 1;
  for (uint32_t m = 0; m < n_merges; ++m, off += 12) {
    const int32_t v[3] = {rd_i32(data + off), rd_i32(data + off + 4), rd_i32(data + off + 8)};
    const char *const names[3] = {"left", "right", "result"};
    for (int k = 0; k < 3; ++k) {
      if (v[k] < 0 || uint32_t(v[k]) >= n_tokens)
        return fail(ML_E_FORMAT, "tokenizer %s: merge %u's %s id %d is outside [0, n_tokens = %u)", path, m, names[k],
                    v[k], n_tokens);
      if (kinds_[size_t(v[k])] != kNormal)
        return fail(ML_E_FORMAT, "tokenizer %s: merge %u's %s id %d is a %s token, not a normal (kind 0) one", path, m,
                    names[k], v[k], kKindName[kinds_[size_t(v[k])]]);
    }
    size_t ll = 0, rl = 0, ol = 0;
    const char *lb = decode(v[0], &ll), *rb = decode(v[1], &rl), *ob = decode(v[2], &ol);
    if (ol != ll + rl || std::memcmp(ob, lb, ll) != 0 || std::memcmp(ob + ll, rb, rl) != 0)
      return fail(ML_E_FORMAT, "tokenizer %s: merge %u's result id %d is not left||right (ids %d, %d)", path, m, v[2],
                  v[0], v[1]);
    const uint64_t key = uint64_t(uint32_t(v[0])) << 32 | uint32_t(v[1]);
    size_t h = size_t(mix64(key)) & mmask;
    while (merges_[h].key != ~0ull) {
      if (merges_[h].key == key)
        return fail(ML_E_FORMAT, "tokenizer %s: merge %u repeats the pair (%d, %d) of merge %u", path, m, v[0], v[1],
                    merges_[h].rank);
      h = (h + 1) & mmask;
    }
    merges_[h] = MergeSlot{key, m, v[2]};
    merge_left_[m] = v[0];
    merge_right_[m] = v[1];
    merge_result_[m] = v[2];
  }

  // Stop ids, the chat template, then the end of the file.
  if (size - off < uint64_t(n_stop) * 4)
    return fail(ML_E_FORMAT, "tokenizer %s: the %u stop ids run past the end of the file", path, n_stop);
  for (int id : {eos_id_, eot_id_})
    if (id >= 0 && std::find(stops_.begin(), stops_.end(), id) == stops_.end()) stops_.push_back(id);
  for (uint32_t k = 0; k < n_stop; ++k, off += 4) {
    const int32_t id = rd_i32(data + off);
    if (id < 0 || uint32_t(id) >= n_tokens)
      return fail(ML_E_FORMAT, "tokenizer %s: stop id %u = %d is outside [0, n_tokens = %u)", path, k, id, n_tokens);
    if (std::find(stops_.begin(), stops_.end(), id) == stops_.end()) stops_.push_back(id);
  }
  if (size - off < template_bytes)
    return fail(ML_E_FORMAT, "tokenizer %s: the chat template's %u bytes (template_bytes) run past the end of the file",
                path, template_bytes);
  template_.assign(reinterpret_cast<const char *>(data + off), template_bytes);
  off += template_bytes;
  if (off != size)
    return fail(ML_E_FORMAT, "tokenizer %s has %llu bytes after its last section (the chat template)", path,
                static_cast<unsigned long long>(size - off));

  // Special and added tokens, by first byte, longest first (then lowest id).
  for (uint32_t i = 0; i < n_tokens; ++i)
    if (kinds_[i] == kSpecial || kinds_[i] == kAdded) specials_.push_back(int(i));
  std::sort(specials_.begin(), specials_.end(), [this](int a, int b) {
    const unsigned char fa = static_cast<unsigned char>(bytes_[offsets_[size_t(a)]]),
                        fb = static_cast<unsigned char>(bytes_[offsets_[size_t(b)]]);
    if (fa != fb) return fa < fb;
    const uint32_t la = offsets_[size_t(a) + 1] - offsets_[size_t(a)], lb = offsets_[size_t(b) + 1] - offsets_[size_t(b)];
    return la != lb ? la > lb : a < b;
  });
  size_t k = 0;
  for (int c = 0; c <= 256; ++c) {
    while (k < specials_.size() && static_cast<unsigned char>(bytes_[offsets_[size_t(specials_[k])]]) < c) ++k;
    special_first_[c] = uint32_t(k);
  }
  return ML_OK;
}

const char *BpeTokenizer::decode(int id, size_t *len) const {
  if (id < 0 || id >= n_tokens_) {
    if (len) *len = 0;
    return "";
  }
  const uint32_t o = offsets_[size_t(id)];
  if (len) *len = offsets_[size_t(id) + 1] - o - 1;
  return bytes_.data() + o;
}

int BpeTokenizer::lookup_normal(const char *s, size_t n) const {
  const size_t mask = hash_ids_.size() - 1;
  for (size_t h = size_t(hash_bytes(s, n)) & mask; hash_ids_[h] != 0; h = (h + 1) & mask) {
    const int id = int(hash_ids_[h]) - 1;
    const uint32_t o = offsets_[size_t(id)];
    if (offsets_[size_t(id) + 1] - o - 1 == n && std::memcmp(bytes_.data() + o, s, n) == 0) return id;
  }
  return -1;
}

int BpeTokenizer::merge_rank(int left, int right, int *result) const {
  const uint64_t key = uint64_t(uint32_t(left)) << 32 | uint32_t(right);
  const size_t mask = merges_.size() - 1;
  for (size_t h = size_t(mix64(key)) & mask; merges_[h].key != ~0ull; h = (h + 1) & mask)
    if (merges_[h].key == key) {
      *result = merges_[h].result;
      return int(merges_[h].rank);
    }
  return -1;
}

// BPE of one pre-token: its bytes as byte tokens, then the adjacent pair of lowest merge rank
// merged, the leftmost among equal ranks, until no pair has a rule. The candidates sit in a
// min-heap by (rank, position) over a linked list of symbols; a candidate is stale when the two
// symbols it names are no longer adjacent with those ids (a merge only ever makes a symbol's
// bytes longer, so an id seen again at a position means the same symbol). O(m log m).
void BpeTokenizer::bpe(const char *s, size_t n, std::vector<int> *out) {
  if (n == 1) {
    out->push_back(byte_id_[static_cast<unsigned char>(s[0])]);
    return;
  }
  if (ignore_merges()) {
    const int id = lookup_normal(s, n);
    if (id >= 0) {
      out->push_back(id);
      return;
    }
  }
  constexpr size_t kCacheKeyMax = 128;
  uint64_t h = 0;
  if (n <= kCacheKeyMax) {
    h = hash_bytes(s, n);
    const auto it = cache_.find(h);
    if (it != cache_.end()) {
      const CacheEntry &e = it->second;
      if (e.key_len == n && std::memcmp(cache_keys_.data() + e.key_off, s, n) == 0) {
        out->insert(out->end(), cache_toks_.begin() + e.tok_off, cache_toks_.begin() + e.tok_off + e.tok_len);
        return;
      }
    }
  }
  syms_.resize(n);
  for (size_t i = 0; i < n; ++i)
    syms_[i] = Sym{byte_id_[static_cast<unsigned char>(s[i])], int(i) - 1, i + 1 < n ? int(i) + 1 : -1};
  heap_.clear();
  // std heap functions keep the largest first: "less" = higher rank, or same rank further right.
  // mutant bpe_leftmost: among equal ranks the rightmost pair merged first
  auto later = [](const Cand &a, const Cand &b) {
    return a.rank > b.rank || (a.rank == b.rank && (ML_MUTANT("bpe_leftmost") ? a.pos < b.pos : a.pos > b.pos));
  };
  auto push = [&](int pos) {
    if (pos < 0) return;
    const int nx = syms_[size_t(pos)].next;
    if (nx < 0) return;
    int result;
    const int rank = merge_rank(syms_[size_t(pos)].id, syms_[size_t(nx)].id, &result);
    if (rank < 0) return;
    heap_.push_back(Cand{uint32_t(rank), uint32_t(pos), syms_[size_t(pos)].id, syms_[size_t(nx)].id, result});
    std::push_heap(heap_.begin(), heap_.end(), later);
  };
  for (size_t i = 0; i + 1 < n; ++i) push(int(i));
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    const Cand c = heap_.back();
    heap_.pop_back();
    Sym &l = syms_[c.pos];
    if (l.id != c.left || l.next < 0 || syms_[size_t(l.next)].id != c.right) continue;  // stale
    Sym &r = syms_[size_t(l.next)];
    l.id = c.result;
    r.id = -1;
    l.next = r.next;
    if (r.next >= 0) syms_[size_t(r.next)].prev = int(c.pos);
    push(l.prev);
    push(int(c.pos));
  }
  const size_t first = out->size();
  for (int i = 0; i >= 0; i = syms_[size_t(i)].next) out->push_back(syms_[size_t(i)].id);
  if (n <= kCacheKeyMax) {
    if (cache_.size() >= (size_t(1) << 17) || cache_toks_.size() > (size_t(1) << 21)) {  // bounded: start afresh
      cache_.clear();
      cache_toks_.clear();
      cache_keys_.clear();
    }
    const CacheEntry e{uint32_t(cache_keys_.size()), uint32_t(n), uint32_t(cache_toks_.size()),
                       uint32_t(out->size() - first)};
    if (cache_.emplace(h, e).second) {
      cache_keys_.append(s, n);
      cache_toks_.insert(cache_toks_.end(), out->begin() + long(first), out->end());
    }
  }
}

ml_status BpeTokenizer::encode_plain(const char *s, size_t n, std::vector<int> *out) {
  if (n == 0) return ML_OK;
  if (normalizer_ == 1 && !ML_MUTANT("bpe_nfc")) {  // mutant: the declared NFC skipped
    bool ascii = true;
    for (size_t i = 0; i < n && ascii; ++i) ascii = static_cast<unsigned char>(s[i]) < 0x80;
    if (!ascii) {  // ASCII text is its own NFC
      if (const ml_status st = unicode::nfc(s, n, &norm_)) return st;
      s = norm_.data();
      n = norm_.size();
    }
  }
  if (const ml_status st = pretokenize(PreTokenizer(pretok_), s, n, &pieces_)) return st;
  for (const auto &p : pieces_)
    if (p.second > p.first) bpe(s + p.first, p.second - p.first, out);
  return ML_OK;
}

ml_status BpeTokenizer::encode(const char *text, bool bos, bool special, std::vector<int> *out) {
  if (text == nullptr) return fail(ML_E_ARG, "encode: text is NULL");
  return encode(text, std::strlen(text), bos, special, out);
}

ml_status BpeTokenizer::encode(const char *text, size_t n, bool bos, bool special, std::vector<int> *out) {
  if (text == nullptr) return fail(ML_E_ARG, "encode: text is NULL");
  if (text[n] != '\0') return fail(ML_E_ARG, "encode: text[%zu] is not NUL", n);
  size_t bad = 0;
  if (!unicode::valid_utf8(text, n, &bad)) return fail(ML_E_ARG, "text is not valid UTF-8 (byte %zu)", bad);
  try {
    out->clear();
    if (bos && (add_bos() || ML_MUTANT("bpe_add_bos")) && bos_id_ >= 0) out->push_back(bos_id_);  // mutant: add_bos ignored
    const char *s = text;
    // Added tokens always, special ones when asked: longest match first at each position, in the
    // text as given (as Hugging Face matches added tokens that are not normalized); the text
    // between matches is normalized, pre-tokenized and merged. (Special and added tokens are
    // valid UTF-8, so a match starts and ends on character boundaries.)
    size_t start = 0;
    if (!specials_.empty()) {
      for (size_t i = 0; i < n;) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        int hit = -1;
        size_t hit_len = 0;
        for (uint32_t k = special_first_[c]; k < special_first_[c + 1]; ++k) {
          const int id = specials_[k];
          if (kinds_[size_t(id)] == kSpecial && !special && !ML_MUTANT("bpe_special_split")) continue;  // mutant: always split
          size_t len = 0;
          const char *b = decode(id, &len);
          if (len <= n - i && std::memcmp(s + i, b, len) == 0) {
            hit = id;
            hit_len = len;
            break;
          }
        }
        if (hit < 0) {
          ++i;
          continue;
        }
        if (const ml_status st = encode_plain(s + start, i - start, out)) return st;
        out->push_back(hit);
        i += hit_len;
        start = i;
      }
    }
    if (const ml_status st = encode_plain(s + start, n - start, out)) return st;
  } catch (const std::bad_alloc &) {
    return fail(ML_E_NOMEM, "encode: cannot allocate the encoder's scratch for %zu bytes of text", n);
  }
  return ML_OK;
}

}  // namespace ml
