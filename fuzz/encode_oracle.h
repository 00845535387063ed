// The references the runtime's encoders are compared with in fuzz_encode and fuzz_tokenizer,
// written out plainly (a full scan per merge, O(n^2)):
//
// EncodeOracle: llama2.c run.c's encode() as run.c writes it, over the tokenizer's pieces and
// scores. Same results token for token: BOS, the dummy-prefix space, one token per UTF-8
// character or <0xXX> byte tokens (id byte + 3), then the best-scoring pair merged first (the
// leftmost of equal scores; a pair scoring <= -1e10 or NaN never merges).
//
// ByteLevelOracle: docs/tokenizer-format.md's encoding steps for an MLTK tokenizer, from its
// token list and merge list: added tokens and (when asked) special tokens split out by a scan at
// every position for the longest one that matches (the lowest id among equal ones), NFC of the
// text between them when declared (runtime/text/unicode.h), the runtime's pre-tokenizer
// (runtime/text/pretokenize.h, which has its own oracle), then per pre-token the adjacent pair of lowest merge rank merged, the leftmost
// first, until none has a rule (ignore_merges: a pre-token that is a normal token is taken whole),
// BOS first when asked and the file's add_bos is set.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "runtime/text/bpe_tokenizer.h"
#include "runtime/text/pretokenize.h"
#include "runtime/text/tokenizer.h"
#include "runtime/text/unicode.h"

namespace mlfuzz {

class EncodeOracle {
 public:
  explicit EncodeOracle(const ml::Tokenizer &t) : t_(t) {
    // Pieces are C strings (an embedded NUL ends them); a duplicate piece means its lowest id.
    for (int id = 0; id < t.vocab(); ++id) ids_.emplace(std::string(t.piece(id)), id);
  }

  // false when the runtime must refuse the text (no BOS or byte-fallback token for it).
  bool encode(const std::string &text, bool bos, std::vector<int> *out) const {
    std::vector<int> tok;
    if (bos) {
      if (t_.vocab() < 2) return false;
      tok.push_back(1);
    }
    auto push = [&](const std::string &s) {
      const auto it = ids_.find(s);
      if (it != ids_.end()) {
        tok.push_back(it->second);
        return true;
      }
      for (unsigned char c : s) {
        if (c + 3 >= t_.vocab()) return false;
        tok.push_back(c + 3);
      }
      return true;
    };
    if (!text.empty() && !push(" ")) return false;
    for (size_t i = 0; i < text.size();) {
      size_t n = 1;
      while (i + n < text.size() && (static_cast<unsigned char>(text[i + n]) & 0xC0) == 0x80 && n < 4) ++n;
      if (!push(text.substr(i, n))) return false;
      i += n;
    }
    while (true) {
      float best = -1e10f;
      int best_id = -1;
      size_t best_i = 0;
      for (size_t i = 0; i + 1 < tok.size(); ++i) {
        const auto it = ids_.find(std::string(t_.piece(tok[i])) + t_.piece(tok[i + 1]));
        if (it != ids_.end() && t_.score(it->second) > best) {
          best = t_.score(it->second);
          best_id = it->second;
          best_i = i;
        }
      }
      if (best_id < 0) break;
      tok[best_i] = best_id;
      tok.erase(tok.begin() + static_cast<long>(best_i) + 1);
    }
    *out = tok;
    return true;
  }

 private:
  const ml::Tokenizer &t_;
  std::map<std::string, int> ids_;
};

class ByteLevelOracle {
 public:
  explicit ByteLevelOracle(const ml::BpeTokenizer &t) : t_(t) {
    for (int id = 0; id < t.n_tokens(); ++id) {
      const std::string b = bytes(id);
      if (t.kind(id) == ml::BpeTokenizer::kNormal) normal_.emplace(b, id);
      if (t.kind(id) == ml::BpeTokenizer::kSpecial || t.kind(id) == ml::BpeTokenizer::kAdded) specials_.push_back(id);
    }
    for (int r = 0; r < t.n_merges(); ++r) {
      int l, rt, res;
      t.merge(r, &l, &rt, &res);
      rules_.emplace(std::make_pair(l, rt), std::make_pair(r, res));  // the first rule of a pair wins
    }
  }

  // The expected ids; false when the text is not valid UTF-8 (the runtime must refuse it).
  bool encode(const std::string &text, bool bos, bool special, std::vector<int> *out) const {
    out->clear();
    if (!ml::unicode::valid_utf8(text.data(), text.size())) return false;
    const std::string &s = text;
    if (bos && t_.add_bos() && t_.bos_id() >= 0) out->push_back(t_.bos_id());
    size_t start = 0, i = 0;
    while (i < s.size()) {
      int hit = -1;
      size_t hit_len = 0;
      for (int id : specials_) {
        if (t_.kind(id) == ml::BpeTokenizer::kSpecial && !special) continue;
        const std::string b = bytes(id);
        if (s.compare(i, b.size(), b) == 0 && (b.size() > hit_len || (b.size() == hit_len && id < hit))) {
          hit = id;
          hit_len = b.size();
        }
      }
      if (hit < 0) {
        ++i;
        continue;
      }
      plain(s.substr(start, i - start), out);
      out->push_back(hit);
      i += hit_len;
      start = i;
    }
    plain(s.substr(start), out);
    return true;
  }

  std::string bytes(int id) const {
    size_t n = 0;
    const char *p = t_.decode(id, &n);
    return std::string(p, n);
  }

 private:
  void plain(const std::string &raw, std::vector<int> *out) const {
    std::string s = raw;
    if (t_.normalizer() == 1 && ml::unicode::nfc(raw.data(), raw.size(), &s) != ML_OK) return;
    std::vector<std::pair<size_t, size_t>> pieces;
    if (s.empty() || ml::pretokenize(ml::PreTokenizer(t_.pretokenizer()), s.data(), s.size(), &pieces) != ML_OK) return;
    for (const auto &p : pieces) {
      const std::string w = s.substr(p.first, p.second - p.first);
      const auto whole = normal_.find(w);
      if (t_.ignore_merges() && whole != normal_.end()) {
        out->push_back(whole->second);
        continue;
      }
      std::vector<int> tok;
      for (unsigned char c : w) tok.push_back(normal_.at(std::string(1, char(c))));
      for (;;) {
        int best = -1, best_res = -1;
        size_t at = 0;
        for (size_t k = 0; k + 1 < tok.size(); ++k) {
          const auto it = rules_.find(std::make_pair(tok[k], tok[k + 1]));
          if (it != rules_.end() && (best < 0 || it->second.first < best)) {
            best = it->second.first;
            best_res = it->second.second;
            at = k;
          }
        }
        if (best < 0) break;
        tok[at] = best_res;
        tok.erase(tok.begin() + long(at) + 1);
      }
      out->insert(out->end(), tok.begin(), tok.end());
    }
  }

  const ml::BpeTokenizer &t_;
  std::map<std::string, int> normal_;
  std::vector<int> specials_;
  std::map<std::pair<int, int>, std::pair<int, int>> rules_;  // (left, right) -> (rank, result)
};

}  // namespace mlfuzz
