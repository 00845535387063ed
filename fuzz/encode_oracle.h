// The reference the runtime's encode is compared with in fuzz_encode and fuzz_tokenizer:
// llama2.c run.c's encode() written out as plainly as run.c writes it (a full scan of every
// adjacent pair per merge, O(n^2)), over the tokenizer's pieces and scores. Same results token
// for token: BOS, the dummy-prefix space, one token per UTF-8 character or <0xXX> byte tokens
// (id byte + 3), then the best-scoring pair merged first (the leftmost of equal scores; a pair
// scoring <= -1e10 or NaN never merges).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "runtime/tokenizer.h"

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

}  // namespace mlfuzz
