// Unicode facts the byte-level tokenizers need, from tables generated out of Python's unicodedata
// (tools/gen_unicode.py -> runtime/unicode_data.inc, which states the Unicode version). No locale,
// no global state; only nfc() allocates (its output and a scratch buffer). Never aborts or throws.
//
//   category(cp)    the general category's major class of a code point (L, M, N, P, S, Z, C);
//                   unassigned, surrogate, private-use and cp > U+10FFFF are kOther
//   is_space(cp)    \s of the pre-tokenizer regexes: Unicode White_Space (25 code points; U+0085
//                   yes, U+FEFF no, as Oniguruma's \s in Hugging Face tokenizers)
//   nfc(in, out)    Unicode Normalization Form C of valid UTF-8 text (canonical decomposition,
//                   canonical ordering by combining class, canonical composition minus the
//                   composition exclusions), as Python's unicodedata.normalize("NFC", s). O(n):
//                   runs of NFC_Quick_Check=Yes starters (all of ASCII) are copied through, only
//                   the segments around other characters are decomposed and recomposed.
//   valid_utf8()    THE UTF-8 validator (tokenizers, chat, GGUF, text stream, server); utf8_char_len
//   utf8_next()     decodes one code point of VALID UTF-8 (callers validate first: valid_utf8)
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/ml.h"

namespace ml::unicode {

enum Category : uint8_t { kOther = 0, kLetter, kMark, kNumber, kPunct, kSymbol, kSeparator };

Category category(uint32_t cp);
inline bool is_letter(uint32_t cp) { return category(cp) == kLetter; }
inline bool is_number(uint32_t cp) { return category(cp) == kNumber; }
bool is_space(uint32_t cp);

// The length (1..4) of the valid UTF-8 character that starts s[0..n), or 0 for a stray continuation,
// a lead byte C0, C1 or F5..FF, an overlong form, a surrogate, > U+10FFFF, a sequence cut short (by
// n or a non-continuation byte), n = 0. Reads only s[0..n).
int utf8_char_len(const char *s, size_t n);
// Whether s[0..n) is valid UTF-8 (NUL included); if not, *bad_offset (if not NULL) = the offset of
// the first byte that starts no valid character.
bool valid_utf8(const char *s, size_t n, size_t *bad_offset = nullptr);

// Decodes the code point at s[i] (valid UTF-8, i < n) and returns its byte length (1..4). On invalid
// input it still reads only s[i..n) and returns 1..4 (garbage code point, no other guarantee).
int utf8_next(const char *s, size_t n, size_t i, uint32_t *cp);

// NFC of valid UTF-8 s[0..n) into out (replaced; s must not point into *out). ML_E_NOMEM (out
// cleared) if memory runs out.
ml_status nfc(const char *s, size_t n, std::string *out);

// The Unicode version of the tables, e.g. "14.0.0".
const char *version();

}  // namespace ml::unicode
