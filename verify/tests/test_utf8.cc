// The one UTF-8 validator (runtime/text/unicode.h: utf8_char_len, valid_utf8) on named edge cases, and
// the text stream (ml_text_stream_feed) that applies it to characters split across tokens: the
// boundaries of every sequence length, overlong forms, surrogates, past U+10FFFF, truncated
// sequences, stray continuation bytes, invalid lead bytes, NUL as a character.
#include <string>
#include <vector>

#include "runtime/ml.h"
#include "runtime/text/unicode.h"
#include "verify/tests/common.h"

namespace {

struct Case {
  const char *name;
  std::string bytes;
  int len;  // utf8_char_len of the whole string: the valid character at its start, or 0
};

const std::vector<Case> &cases() {
  static const std::vector<Case> k = {
      {"ASCII 'a'", "a", 1},
      {"NUL is a character", std::string(1, '\0'), 1},
      {"U+007F, last 1-byte", "\x7F", 1},
      {"U+0080, first 2-byte", "\xC2\x80", 2},
      {"U+07FF, last 2-byte", "\xDF\xBF", 2},
      {"U+0800, first 3-byte", "\xE0\xA0\x80", 3},
      {"U+D7FF, below the surrogates", "\xED\x9F\xBF", 3},
      {"U+E000, above the surrogates", "\xEE\x80\x80", 3},
      {"U+FFFF, last 3-byte", "\xEF\xBF\xBF", 3},
      {"U+10000, first 4-byte", "\xF0\x90\x80\x80", 4},
      {"U+10FFFF, the last code point", "\xF4\x8F\xBF\xBF", 4},
      {"overlong 2-byte '/' (C0 AF)", "\xC0\xAF", 0},
      {"overlong 2-byte U+007F (C1 BF)", "\xC1\xBF", 0},
      {"overlong 3-byte U+07FF (E0 9F BF)", "\xE0\x9F\xBF", 0},
      {"overlong 4-byte U+FFFF (F0 8F BF BF)", "\xF0\x8F\xBF\xBF", 0},
      {"surrogate U+D800 (ED A0 80)", "\xED\xA0\x80", 0},
      {"surrogate U+DFFF (ED BF BF)", "\xED\xBF\xBF", 0},
      {"U+110000, past the last (F4 90 80 80)", "\xF4\x90\x80\x80", 0},
      {"lead F5", "\xF5\x80\x80\x80", 0},
      {"lead FF", "\xFF", 0},
      {"stray continuation 80", "\x80", 0},
      {"truncated 2-byte", "\xC3", 0},
      {"truncated 3-byte", "\xE4\xB8", 0},
      {"truncated 4-byte", "\xF0\x9F\x99", 0},
      {"3-byte with ASCII third byte", "\xE4\xB8" "a", 0},
      {"4-byte with a lead as fourth byte", "\xF0\x9F\x99\xC3", 0},
  };
  return k;
}

}  // namespace

TEST_CASE("utf8: utf8_char_len and valid_utf8 on named edge cases", "[unicode][utf8]") {
  int ran = 0;
  for (const Case &c : cases()) {
    INFO(c.name);
    CHECK(ml::unicode::utf8_char_len(c.bytes.data(), c.bytes.size()) == c.len);
    size_t bad = 99;
    const bool ok = ml::unicode::valid_utf8(c.bytes.data(), c.bytes.size(), &bad);
    CHECK(ok == (c.len == int(c.bytes.size())));
    if (!ok) CHECK(bad == (c.len == 0 ? 0u : size_t(c.len)));
    // Behind valid text the offset is where the bad character starts.
    const std::string text = "ok \xC3\xA9 " + c.bytes;
    CHECK(ml::unicode::valid_utf8(text.data(), text.size(), &bad) == ok);
    if (!ok) CHECK(bad == 6 + (c.len == 0 ? 0u : size_t(c.len)));
    ++ran;
  }
  CHECK(ml::unicode::utf8_char_len("a", 0) == 0);  // n = 0: nothing to read
  CHECK(ml::unicode::valid_utf8("", 0));
  REQUIRE(ran == int(cases().size()));
  REQUIRE(ran > 0);
}

TEST_CASE("utf8: the text stream emits only valid characters, whole, however the bytes are split", "[unicode][utf8]") {
  int ran = 0;
  for (const Case &c : cases()) {
    if (c.bytes.empty() || c.bytes[0] == '\0') continue;  // a piece is a C string
    INFO(c.name);
    // Byte by byte (one token per byte), then the same bytes as one piece: the same text, valid.
    for (int split = 0; split < 2; ++split) {
      ml_text_stream st{};
      std::string shown;
      char out[16];
      if (split == 0) {
        for (char b : c.bytes) {
          const char piece[2] = {b, 0};
          shown.append(out, ml_text_stream_feed(&st, piece, out));
        }
      } else {
        shown.append(out, ml_text_stream_feed(&st, c.bytes.c_str(), out));
      }
      // Valid: the character (U+007F alone is a control byte, dropped as llama2.c's safe_printf);
      // invalid: nothing of it, only an ASCII byte that cut a sequence short.
      std::string want = c.len == int(c.bytes.size()) && c.bytes != "\x7F" ? c.bytes : "";
      if (c.len == 0 && c.bytes.back() == 'a') want = "a";
      CHECK(shown == want);
      CHECK(ml::unicode::valid_utf8(shown.data(), shown.size()));
    }
    ++ran;
  }
  REQUIRE(ran > 0);
}
