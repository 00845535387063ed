// The tokenizer in a GGUF's metadata as one of the runtime's tokenizer images
// (docs/tokenizer-format.md), which ml_open then loads and validates like a file:
//   tokenizer.ggml.model 'llama' (SentencePiece) → llama2.c tokenizer.bin: u32 max token length,
//     then per token f32 score, u32 length, bytes; ▁ becomes a space, the BOS piece "\n<s>\n" and
//     EOS "\n</s>\n" (what llama2.c's tokenizer.py writes);
//   tokenizer.ggml.model 'gpt2' (byte-level BPE) → MLTK: normal and byte tokens mapped back from
//     GPT-2's byte-to-unicode table, control tokens special, user-defined ones added, unused and
//     unknown ones absent (llama.cpp pads a larger vocabulary with [PAD<i>]: trailing ones left
//     out), merges "a b" by rank (a repeated pair keeps its later rank), BOS/EOS/EOT/PAD from the
//     *_token_id keys (EOT else the first special of <|eot_id|>, <|im_end|>, ...), EOM as a stop id,
//     the pre-tokenizer from tokenizer.ggml.pre, NFC for qwen2, add_bos from
//     tokenizer.ggml.add_bos_token (default: on for llama-bpe, which also ignores merges), the
//     chat template from tokenizer.chat_template.
// The same mapping as tools/bpe.py's from_gguf_metadata and tools/gguf.py's llama2c_tokenizer
// (tested: the images are byte for byte those convert.py writes). Another tokenizer.ggml.model
// leaves the model without a tokenizer (ml_open says why when one is needed); malformed metadata
// of a known model is an error naming the key.
#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/error.h"
#include "runtime/gguf.h"
#include "runtime/text/unicode.h"

namespace ml {

namespace {

enum { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };  // GGUF token types
enum { kKindNormal = 0, kKindSpecial = 1, kKindAdded = 2, kKindAbsent = 3 };                 // MLTK kinds

void put32(std::vector<uint8_t> *o, uint32_t v) {
  for (int i = 0; i < 4; ++i) o->push_back(uint8_t(v >> (8 * i)));
}

std::string shown(const char *p, uint64_t n) {
  std::string s;
  for (uint64_t i = 0; i < n && s.size() < 40; ++i) {
    const unsigned char ch = static_cast<unsigned char>(p[i]);
    if (ch < 0x20 || ch == '\'' || ch == '\\' || ch == 0x7f) {
      char e[8];
      std::snprintf(e, sizeof e, "\\x%02x", ch);
      s += e;
    } else {
      s += char(ch);
    }
  }
  return "'" + s + (n > 40 ? "...'" : "'");
}

// GPT-2's byte-to-unicode table, inverted: code point → byte (or -1).
int byte_of(uint32_t cp) {
  if ((cp >= 33 && cp <= 126) || (cp >= 161 && cp <= 172) || (cp >= 174 && cp <= 255)) return int(cp);
  if (cp < 256 || cp >= 256 + 68) return -1;
  int extra = 0;  // the bytes not kept as themselves, in order, are 256, 257, ...
  for (int b = 0; b < 256; ++b) {
    const bool kept = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    if (kept) continue;
    if (uint32_t(256 + extra) == cp) return b;
    ++extra;
  }
  return -1;
}

// The bytes a byte-level vocabulary string stands for; false when it is not UTF-8 or a character
// is outside the table.
bool unmap(const char *p, uint64_t n, std::string *out) {
  static int table[324];
  static bool init = [] {
    for (uint32_t cp = 0; cp < 324; ++cp) table[cp] = byte_of(cp);
    return true;
  }();
  (void)init;
  out->clear();
  for (uint64_t i = 0; i < n;) {
    const unsigned char c0 = static_cast<unsigned char>(p[i]);
    uint32_t cp;
    if (c0 < 0x80) {
      cp = c0;
      i += 1;
    } else if ((c0 & 0xE0) == 0xC0 && i + 1 < n && (static_cast<unsigned char>(p[i + 1]) & 0xC0) == 0x80) {
      cp = uint32_t(c0 & 0x1F) << 6 | (static_cast<unsigned char>(p[i + 1]) & 0x3F);
      i += 2;
    } else {
      return false;  // every table character is below U+0800: two bytes at most
    }
    if (cp >= 324 || table[cp] < 0) return false;
    out->push_back(char(table[cp]));
  }
  return true;
}

// An id key: absent → -1; else an integer in [0, n).
ml_status id_key(const GgufFile &g, const char *key, int n, int *id) {
  int64_t v = -1;
  bool found = false;
  *id = -1;
  if (const ml_status s = g.get_int(key, &v, &found)) return s;
  if (!found) return ML_OK;
  if (v < 0 || v >= n)
    return fail(ML_E_FORMAT, "%s: metadata %s = %lld is outside the %d tokens", g.path(), key, static_cast<long long>(v), n);
  *id = int(v);
  return ML_OK;
}

ml_status llama_tokenizer(const GgufFile &g, int vocab, std::vector<uint8_t> *image) {
  const char *path = g.path();
  std::vector<std::pair<const char *, uint64_t>> tokens;
  std::vector<float> scores;
  if (const ml_status s = g.get_strings("tokenizer.ggml.tokens", &tokens)) return s;
  if (const ml_status s = g.get_floats("tokenizer.ggml.scores", &scores)) return s;
  if (tokens.size() != scores.size())
    return fail(ML_E_FORMAT, "%s: metadata tokenizer.ggml.tokens has %zu entries, tokenizer.ggml.scores %zu", path, tokens.size(),
                scores.size());
  if (tokens.size() != size_t(vocab))
    return fail(ML_E_FORMAT, "%s: metadata tokenizer.ggml.tokens has %zu tokens but the model's vocabulary (token_embd.weight rows) is %d",
                path, tokens.size(), vocab);
  int bos = -1, eos = -1;
  if (const ml_status s = id_key(g, "tokenizer.ggml.bos_token_id", vocab, &bos)) return s;
  if (const ml_status s = id_key(g, "tokenizer.ggml.eos_token_id", vocab, &eos)) return s;
  static const char kMark[] = "\xE2\x96\x81";  // SentencePiece's ▁
  std::vector<std::string> pieces(tokens.size());
  uint32_t max_len = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string &p = pieces[i];
    if (int(i) == bos) {
      p = "\n<s>\n";
    } else if (int(i) == eos) {
      p = "\n</s>\n";
    } else {
      const char *t = tokens[i].first;
      const uint64_t n = tokens[i].second;
      if (n > 65535) return fail(ML_E_FORMAT, "%s: metadata tokenizer.ggml.tokens[%zu] is %llu bytes long", path, i,
                                 static_cast<unsigned long long>(n));
      for (uint64_t k = 0; k < n;) {
        if (k + 3 <= n && std::memcmp(t + k, kMark, 3) == 0) {
          p += ' ';
          k += 3;
        } else {
          p += t[k++];
        }
      }
    }
    // llama2.c's tokenizer.bin holds pieces of 1 to 4096 bytes at most (Tokenizer::load).
    if (p.size() > 4096)
      return fail(ML_E_FORMAT, "%s: metadata tokenizer.ggml.tokens[%zu] is %zu bytes long (at most 4096 in a SentencePiece vocabulary)",
                  path, i, p.size());
    if (p.size() > max_len) max_len = uint32_t(p.size());
  }
  if (max_len == 0) return fail(ML_E_FORMAT, "%s: metadata tokenizer.ggml.tokens: every token is empty", path);
  image->clear();
  put32(image, max_len);
  for (size_t i = 0; i < pieces.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &scores[i], 4);
    put32(image, bits);
    put32(image, uint32_t(pieces[i].size()));
    image->insert(image->end(), pieces[i].begin(), pieces[i].end());
  }
  return ML_OK;
}

struct Pre { const char *name; uint8_t id; };
constexpr Pre kPre[] = {{"gpt-2", 0}, {"llama-bpe", 1}, {"llama3", 1}, {"llama-v3", 1}, {"qwen2", 2}, {"smollm", 3}};

ml_status gpt2_tokenizer(const GgufFile &g, int vocab, std::vector<uint8_t> *image, int *n_tokens) {
  const char *path = g.path();
  std::string pre_name;
  bool found = false;
  if (const ml_status s = g.get_string("tokenizer.ggml.pre", &pre_name, &found)) return s;
  if (!found) return fail(ML_E_FORMAT, "%s: missing metadata key tokenizer.ggml.pre (which pre-tokenizer)", path);
  int pre = -1;
  for (const Pre &p : kPre)
    if (pre_name == p.name) pre = p.id;
  if (pre < 0)
    return fail(ML_E_FORMAT,
                "%s: metadata tokenizer.ggml.pre %s is not a pre-tokenizer this runtime implements (gpt-2, llama-bpe, llama-v3, "
                "llama3, qwen2, smollm)",
                path, shown(pre_name.data(), pre_name.size()).c_str());
  std::vector<std::pair<const char *, uint64_t>> tokens, merges;
  std::vector<int64_t> types;
  if (const ml_status s = g.get_strings("tokenizer.ggml.tokens", &tokens)) return s;
  if (const ml_status s = g.get_strings("tokenizer.ggml.merges", &merges, &found)) return s;
  bool have_types = false;
  if (const ml_status s = g.get_ints("tokenizer.ggml.token_type", &types, &have_types)) return s;
  const int n_all = int(tokens.size());
  if (tokens.empty() || tokens.size() > (1u << 24))
    return fail(ML_E_FORMAT, "%s: metadata tokenizer.ggml.tokens has %zu entries (1 to 2^24)", path, tokens.size());
  if (!have_types) types.assign(tokens.size(), kNormal);
  if (types.size() != tokens.size())
    return fail(ML_E_FORMAT, "%s: metadata tokenizer.ggml.token_type has %zu entries, tokenizer.ggml.tokens %zu", path, types.size(),
                tokens.size());
  int ids[4];  // bos, eos, eot, pad
  const char *id_keys[4] = {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                            "tokenizer.ggml.padding_token_id"};
  for (int k = 0; k < 4; ++k)
    if (const ml_status s = id_key(g, id_keys[k], n_all, &ids[k])) return s;
  int eom;
  if (const ml_status s = id_key(g, "tokenizer.ggml.eom_token_id", n_all, &eom)) return s;
  int n_keep = 0;
  for (int i = 0; i < n_all; ++i)
    if (types[size_t(i)] != kUnused && types[size_t(i)] != kUnknown) n_keep = i + 1;
  for (int id : {ids[0], ids[1], ids[2], ids[3], eom}) n_keep = std::max(n_keep, id + 1);
  const int n = std::max(n_keep, 1);
  if (n > vocab)
    return fail(ML_E_FORMAT, "%s: the tokenizer has %d tokens but the model's vocabulary (token_embd.weight rows) is %d", path, n, vocab);

  std::vector<uint8_t> kind(size_t(n), kKindAbsent);
  std::vector<std::string> text(static_cast<size_t>(n));
  std::unordered_map<std::string, int> normal;  // bytes → id of the normal tokens
  normal.reserve(size_t(n));
  for (int i = 0; i < n; ++i) {
    const char *t = tokens[size_t(i)].first;
    const uint64_t len = tokens[size_t(i)].second;
    const int64_t tt = types[size_t(i)];
    if (tt == kNormal || tt == kByte) {
      if (!unmap(t, len, &text[size_t(i)]))
        return fail(ML_E_FORMAT, "%s: metadata tokenizer.ggml.tokens[%d] %s is not a byte-level string (a character outside GPT-2's byte table)",
                    path, i, shown(t, len).c_str());
      if (text[size_t(i)].empty()) return fail(ML_E_FORMAT, "%s: metadata tokenizer.ggml.tokens[%d] is empty", path, i);
      if (text[size_t(i)].size() > 65535)
        return fail(ML_E_FORMAT, "%s: metadata tokenizer.ggml.tokens[%d] is %zu bytes long (at most 65535)", path, i, text[size_t(i)].size());
      const auto ins = normal.emplace(text[size_t(i)], i);
      if (!ins.second)
        return fail(ML_E_FORMAT, "%s: metadata tokenizer.ggml.tokens: tokens %d and %d are both %s", path, ins.first->second, i,
                    shown(t, len).c_str());
      kind[size_t(i)] = kKindNormal;
    } else if (tt == kControl || tt == kUserDefined) {
      if (len == 0 || len > 65535 || !unicode::valid_utf8(t, size_t(len)))
        return fail(ML_E_FORMAT, "%s: metadata tokenizer.ggml.tokens[%d]: a control/user-defined token must be 1 to 65535 bytes of UTF-8",
                    path, i);
      text[size_t(i)].assign(t, size_t(len));
      kind[size_t(i)] = tt == kControl ? kKindSpecial : kKindAdded;
    } else if (tt != kUnused && tt != kUnknown) {
      return fail(ML_E_FORMAT, "%s: metadata tokenizer.ggml.token_type[%d] = %lld is not a token type (1-6)", path, i,
                  static_cast<long long>(tt));
    }
  }
  for (int b = 0; b < 256; ++b)
    if (!normal.count(std::string(1, char(b))))
      return fail(ML_E_FORMAT, "%s: metadata tokenizer.ggml.tokens has no token for the byte 0x%02x (a byte-level BPE vocabulary has all 256)",
                  path, b);

  // Merges by rank; a repeated (left, right) pair keeps its later rank.
  struct Merge { int a, b, c; };
  std::vector<Merge> out;
  out.reserve(merges.size());
  std::unordered_map<uint64_t, size_t> seen;
  std::string la, lb;
  for (size_t r = 0; r < merges.size(); ++r) {
    const char *m = merges[r].first;
    const uint64_t len = merges[r].second;
    const char *sp = static_cast<const char *>(std::memchr(m, ' ', size_t(len)));
    if (!sp || sp == m || sp + 1 == m + len || std::memchr(sp + 1, ' ', size_t(m + len - sp - 1)))
      return fail(ML_E_FORMAT, "%s: metadata tokenizer.ggml.merges[%zu] %s is not two tokens", path, r, shown(m, len).c_str());
    if (!unmap(m, uint64_t(sp - m), &la) || !unmap(sp + 1, uint64_t(m + len - sp - 1), &lb))
      return fail(ML_E_FORMAT, "%s: metadata tokenizer.ggml.merges[%zu] %s is not byte-level strings", path, r, shown(m, len).c_str());
    const auto ia = normal.find(la), ib = normal.find(lb), ic = normal.find(la + lb);
    if (ia == normal.end() || ib == normal.end() || ic == normal.end()) {
      const std::string &miss = ia == normal.end() ? la : ib == normal.end() ? lb : la + lb;
      return fail(ML_E_FORMAT, "%s: metadata tokenizer.ggml.merges[%zu] %s: %s is not a token of the vocabulary", path, r,
                  shown(m, len).c_str(), shown(miss.data(), miss.size()).c_str());
    }
    const uint64_t key = uint64_t(uint32_t(ia->second)) << 32 | uint32_t(ib->second);
    const auto prev = seen.find(key);
    if (prev != seen.end()) out[prev->second].a = -1;  // dropped: the later rank wins
    seen[key] = out.size();
    out.push_back({ia->second, ib->second, ic->second});
  }

  int eot = ids[2];
  if (eot < 0) {  // the first of the well-known end-of-turn tokens that is special
    static const char *const kEot[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<EOT>", "<end_of_utterance>"};
    for (const char *name : kEot) {
      for (int i = 0; i < n && eot < 0; ++i)
        if ((kind[size_t(i)] == kKindSpecial || kind[size_t(i)] == kKindAdded) && text[size_t(i)] == name) {
          if (kind[size_t(i)] == kKindSpecial) eot = i;
          break;  // the first token of that content decides
        }
      if (eot >= 0) break;
    }
  }
  bool add_bos = pre == 1, found_bos = false;
  if (const ml_status s = g.get_bool("tokenizer.ggml.add_bos_token", &add_bos, &found_bos)) return s;
  if (!found_bos) add_bos = pre == 1;
  if (add_bos && ids[0] < 0) return fail(ML_E_FORMAT, "%s: metadata tokenizer.ggml.add_bos_token is true but there is no BOS token", path);
  std::string tmpl;
  if (const ml_status s = g.get_string("tokenizer.chat_template", &tmpl, &found)) return s;
  if (tmpl.size() > (1u << 20))
    return fail(ML_E_FORMAT, "%s: metadata tokenizer.chat_template is %zu bytes (at most 2^20)", path, tmpl.size());
  std::vector<int> stops;
  if (eom >= 0 && eom != ids[1] && eom != eot) stops.push_back(eom);

  // The MLTK image (docs/tokenizer-format.md).
  size_t n_merges = 0;
  for (const Merge &mg : out) n_merges += mg.a >= 0;
  image->clear();
  const char magic[4] = {'M', 'L', 'T', 'K'};
  image->insert(image->end(), magic, magic + 4);
  for (size_t v : {size_t(1), size_t(n), n_merges}) put32(image, uint32_t(v));  // version, tokens, merges
  image->push_back(uint8_t(pre));
  image->push_back(pre == 2 ? 1 : 0);  // NFC for qwen2: its tokenizer.json declares it; GGUF has no key
  image->push_back(uint8_t((add_bos ? 1 : 0) | (pre == 1 ? 2 : 0)));
  image->push_back(0);
  for (int v : {ids[0], ids[1], eot, ids[3]}) put32(image, uint32_t(v));
  put32(image, uint32_t(stops.size()));
  put32(image, uint32_t(tmpl.size()));
  image->insert(image->end(), 20, 0);
  for (int i = 0; i < n; ++i) {
    image->push_back(kind[size_t(i)]);
    const size_t len = text[size_t(i)].size();
    image->push_back(uint8_t(len));
    image->push_back(uint8_t(len >> 8));
    image->insert(image->end(), text[size_t(i)].begin(), text[size_t(i)].end());
  }
  for (const Merge &mg : out)
    if (mg.a >= 0)
      for (int v : {mg.a, mg.b, mg.c}) put32(image, uint32_t(v));
  for (int v : stops) put32(image, uint32_t(v));
  image->insert(image->end(), tmpl.begin(), tmpl.end());
  *n_tokens = n;
  return ML_OK;
}

}  // namespace

ml_status gguf_tokenizer(const GgufFile &g, int vocab, std::vector<uint8_t> *image, int *n_tokens, std::string *missing,
                         std::string *about) {
  std::string model;
  bool found = false;
  image->clear();
  missing->clear();
  *n_tokens = vocab;
  if (const ml_status s = g.get_string("tokenizer.ggml.model", &model, &found)) return s;
  if (!found) {
    *missing = std::string(g.path()) + " has no tokenizer (no metadata key tokenizer.ggml.model)";
    *about = "no tokenizer";
    return ML_OK;
  }
  if (model == "llama") {
    if (const ml_status s = llama_tokenizer(g, vocab, image)) return s;
    *about = "tokenizer: SentencePiece ('llama'), " + std::to_string(vocab) + " tokens";
    return ML_OK;
  }
  if (model == "gpt2") {
    if (const ml_status s = gpt2_tokenizer(g, vocab, image, n_tokens)) return s;
    *about = "tokenizer: byte-level BPE ('gpt2'), " + std::to_string(*n_tokens) + " tokens";
    return ML_OK;
  }
  *missing = std::string(g.path()) + ": tokenizer.ggml.model is '" + gguf_printable(model) +
             "'; this runtime reads 'llama' (SentencePiece) and 'gpt2' (byte-level BPE) tokenizers";
  *about = "no tokenizer it can use";
  return ML_OK;
}

}  // namespace ml
