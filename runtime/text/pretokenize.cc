// The pre-tokenizer regexes of the byte-level BPE families, by hand (contract in pretokenize.h; the
// regexes in docs/tokenizer-format.md, step 4). Each matcher below takes a position i < n and
// returns the end of the match the regex would make there: the alternatives are tried in the
// regex's order and the first that matches wins, with the greedy/backtracking result a
// backtracking engine (Oniguruma, as Hugging Face tokenizers uses) gives. Every character is a
// letter (\p{L}), a number (\p{N}), White_Space (\s) or "other", so some alternative always
// matches and the pieces tile the input.
//
// \s is the Unicode White_Space property, as Oniguruma's \s in Unicode mode (and the Rust regex
// crate's): U+0085 is a space, U+FEFF is not (JavaScript's \s says the opposite on both).
// Case-insensitive contractions, (?i:'s|...), fold with Unicode simple case folding as Oniguruma
// does: ASCII letters and U+017F LATIN SMALL LETTER LONG S (which folds to 's'); no other
// character folds to one of s t r e v m l d.
//
// Work per character is O(1) amortized: a whitespace run is scanned at most three times, every
// other run once, so pretokenize is linear in n.
#include "runtime/text/pretokenize.h"

#include <new>

#include "kernels/mutants.h"
#include "runtime/text/unicode.h"

namespace ml {
namespace {

enum Cls : uint8_t { kLetter, kNumber, kSpace, kOther };

struct AsciiClasses {
  uint8_t cls[128];
  constexpr AsciiClasses() : cls() {
    for (int c = 0; c < 128; ++c) {
      const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
      const bool digit = c >= '0' && c <= '9';
      const bool space = c == ' ' || (c >= 0x09 && c <= 0x0D);
      cls[c] = letter ? kLetter : digit ? kNumber : space ? kSpace : kOther;
    }
  }
};
constexpr AsciiClasses kAscii{};

struct Ch {
  uint32_t cp;
  size_t len;
  Cls cls;
};

// The character at s[i] (i < n, valid UTF-8) with its class.
inline Ch at(const char *s, size_t n, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return {c, 1, static_cast<Cls>(kAscii.cls[c])};
  uint32_t cp;
  const size_t len = static_cast<size_t>(unicode::utf8_next(s, n, i, &cp));
  if (unicode::is_space(cp)) return {cp, len, kSpace};
  const unicode::Category k = unicode::category(cp);
  return {cp, len, k == unicode::kLetter ? kLetter : k == unicode::kNumber ? kNumber : kOther};
}

// End of the run of characters of class cls that starts at i (s[i] is of that class), at most
// max_chars characters long.
size_t run_end(const char *s, size_t n, size_t i, Cls cls, size_t max_chars = SIZE_MAX) {
  size_t count = 0;
  while (i < n && count < max_chars) {
    const Ch c = at(s, n, i);
    if (c.cls != cls) break;
    i += c.len;
    ++count;
  }
  return i;
}

// End of [\r\n]* from i.
size_t newlines_end(const char *s, size_t n, size_t i) {
  while (i < n && (s[i] == '\r' || s[i] == '\n')) ++i;
  return i;
}

// The contraction 's|'t|'re|'ve|'m|'ll|'d at s[i] == '\'': its end, or 0 when none matches.
// case_insensitive: (?i:...) (see the file comment for the folding).
size_t contraction(const char *s, size_t n, size_t i, bool case_insensitive) {
  // The character at j folded to lower case into *c; its length, 0 past the end.
  auto folded = [&](size_t j, uint32_t *c) -> size_t {
    if (j >= n) return 0;
    const Ch ch = at(s, n, j);
    *c = ch.cp;
    if (case_insensitive) {
      if (*c >= 'A' && *c <= 'Z') *c += 'a' - 'A';
      if (*c == 0x17F) *c = 's';
    }
    return ch.len;
  };
  const size_t j = i + 1;
  uint32_t c1, c2;
  const size_t l1 = folded(j, &c1);
  if (l1 == 0) return 0;
  if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return j + l1;
  if (c1 == 'r' || c1 == 'v' || c1 == 'l') {
    const size_t l2 = folded(j + l1, &c2);
    if (l2 != 0 && c2 == (c1 == 'l' ? uint32_t('l') : uint32_t('e'))) return j + l1 + l2;
  }
  return 0;
}

// The whitespace alternatives at i (s[i] is White_Space): with newlines, `\s*[\r\n]+` first
// (llama3/qwen2); then `\s+(?!\S)` (the run minus its last character when a non-space follows and
// the run has two or more characters; the whole run at the end of the text); then `\s+`.
size_t whitespace_end(const char *s, size_t n, size_t i, bool newlines) {
  size_t j = i, last = i, newline_end = 0;
  while (j < n) {
    const Ch c = at(s, n, j);
    if (c.cls != kSpace) break;
    last = j;
    j += c.len;
    if (c.cp == '\r' || c.cp == '\n') newline_end = j;
  }
  if (newlines && newline_end != 0) return newline_end;
  if (j == n) return n;
  return last > i ? last : j;
}

// gpt2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
size_t match_gpt2(const char *s, size_t n, size_t i) {
  const Ch c = at(s, n, i);
  if (c.cp == '\'') {
    if (const size_t e = contraction(s, n, i, false)) return e;
  }
  if (c.cls != kSpace) return run_end(s, n, i, c.cls);  // the three ` ?X+` without their space
  if (c.cp == ' ' && i + 1 < n) {
    const Ch d = at(s, n, i + 1);
    if (d.cls != kSpace) return run_end(s, n, i + 1, d.cls);  // ` X+`
  }
  return whitespace_end(s, n, i, false);
}

// llama3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
//         \s*[\r\n]+|\s+(?!\S)|\s+
// qwen2: the same with \p{N} for \p{N}{1,3} (max_digits 1).
size_t match_llama3(const char *s, size_t n, size_t i, size_t max_digits) {
  const Ch c = at(s, n, i);
  if (c.cp == '\'') {
    // Mutant: contractions matched case-sensitively ("DON'T" would split "'", "T").
    if (const size_t e = contraction(s, n, i, !ML_MUTANT("pretok_contraction"))) return e;
  }
  if (c.cls == kLetter) return run_end(s, n, i, kLetter);
  if (c.cls != kNumber && c.cp != '\r' && c.cp != '\n' && i + c.len < n) {  // one non-letter/number prefix
    if (at(s, n, i + c.len).cls == kLetter) return run_end(s, n, i + c.len, kLetter);
  }
  if (c.cls == kNumber) return run_end(s, n, i, kNumber, max_digits);
  if (c.cls == kOther) return newlines_end(s, n, run_end(s, n, i, kOther));
  if (c.cp == ' ' && i + 1 < n && at(s, n, i + 1).cls == kOther) {
    return newlines_end(s, n, run_end(s, n, i + 1, kOther));
  }
  return whitespace_end(s, n, i, true);
}

void split(PreTokenizer kind, const char *s, size_t begin, size_t n, std::vector<std::pair<size_t, size_t>> *pieces) {
  for (size_t i = begin; i < n;) {
    size_t e;
    switch (kind) {
      case PreTokenizer::llama3: e = match_llama3(s, n, i, 3); break;
      case PreTokenizer::qwen2: e = match_llama3(s, n, i, ML_MUTANT("pretok_qwen_digits") ? 3 : 1); break;  // mutant: \p{N}{1,3}
      default: e = match_gpt2(s, n, i); break;
    }
    pieces->emplace_back(i, e);
    i = e;
  }
}

}  // namespace

const char *pretokenizer_name(PreTokenizer p) {
  switch (p) {
    case PreTokenizer::gpt2: return "gpt2";
    case PreTokenizer::llama3: return "llama3";
    case PreTokenizer::qwen2: return "qwen2";
    case PreTokenizer::smollm: return "smollm";
  }
  return "unknown";
}

ml_status pretokenize(PreTokenizer kind, const char *s, size_t n, std::vector<std::pair<size_t, size_t>> *pieces) {
  try {
    pieces->clear();
    if (kind != PreTokenizer::smollm) {
      split(kind, s, 0, n, pieces);
      return ML_OK;
    }
    // smollm: Digits(individual_digits) isolates every \p{N} character (Rust char::is_numeric),
    // then the gpt2 regex runs on each stretch between them.
    for (size_t i = 0; i < n;) {
      const Ch c = at(s, n, i);
      if (c.cls == kNumber) {
        pieces->emplace_back(i, i + c.len);
        i += c.len;
        continue;
      }
      size_t e = i + c.len;
      while (e < n) {
        const Ch d = at(s, n, e);
        if (d.cls == kNumber) break;
        e += d.len;
      }
      split(PreTokenizer::gpt2, s, i, e, pieces);
      i = e;
    }
    return ML_OK;
  } catch (const std::bad_alloc &) {
    pieces->clear();
    return ML_E_NOMEM;
  }
}

}  // namespace ml
