// The Unicode layer and the pre-tokenizers (runtime/text/unicode.h, runtime/text/pretokenize.h):
//  - category / is_space / utf8_next on named edge cases;
//  - NFC on named cases and on verify/data/nfc_expected.txt (Python's unicodedata.normalize: every
//    canonical decomposition, the corpus, random mark/jamo strings; verify/data/gen_tokenizer_corpus.py);
//  - the four pre-tokenizers on named cases and on verify/data/pretokenize_expected.txt, the pieces
//    node's own regex engine gives for the families' regexes (verify/pretokenize_oracle.js) on
//    tokenizer_corpus.txt and pretokenize_extra_corpus.txt: 0 mismatches.
// The data files are found through $ML_SOURCE (the source tree; set by cmake/Tests.cmake).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "runtime/text/pretokenize.h"
#include "runtime/text/unicode.h"
#include "verify/tests/common.h"

namespace {

using ml::PreTokenizer;
using ml::unicode::Category;

std::string data_path(const char *name) { return test::env_path("ML_SOURCE", std::string("verify/data/") + name); }

void put_utf8(uint32_t cp, std::string *out) {
  if (cp < 0x80) {
    out->push_back(char(cp));
  } else if (cp < 0x800) {
    out->push_back(char(0xC0 | cp >> 6));
    out->push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(char(0xE0 | cp >> 12));
    out->push_back(char(0x80 | (cp >> 6 & 0x3F)));
    out->push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(char(0xF0 | cp >> 18));
    out->push_back(char(0x80 | (cp >> 12 & 0x3F)));
    out->push_back(char(0x80 | (cp >> 6 & 0x3F)));
    out->push_back(char(0x80 | (cp & 0x3F)));
  }
}

// Parses one JSON string literal at s[*i] (the corpus format: escapes \" \\ \n \r \t \uXXXX with
// surrogate pairs); advances *i past it. False on anything else.
bool parse_json_string(const std::string &s, size_t *i, std::string *out) {
  out->clear();
  if (*i >= s.size() || s[*i] != '"') return false;
  size_t k = *i + 1;
  auto hex4 = [&](size_t at, uint32_t *v) {
    if (at + 4 > s.size()) return false;
    *v = 0;
    for (size_t j = at; j < at + 4; ++j) {
      const char c = s[j];
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) return false;
      *v = *v << 4 | uint32_t(d);
    }
    return true;
  };
  while (k < s.size()) {
    const char c = s[k];
    if (c == '"') {
      *i = k + 1;
      return true;
    }
    if (c != '\\') {
      out->push_back(c);
      ++k;
      continue;
    }
    if (k + 1 >= s.size()) return false;
    const char e = s[k + 1];
    k += 2;
    switch (e) {
      case '"': out->push_back('"'); break;
      case '\\': out->push_back('\\'); break;
      case '/': out->push_back('/'); break;
      case 'n': out->push_back('\n'); break;
      case 'r': out->push_back('\r'); break;
      case 't': out->push_back('\t'); break;
      case 'b': out->push_back('\b'); break;
      case 'f': out->push_back('\f'); break;
      case 'u': {
        uint32_t v;
        if (!hex4(k, &v)) return false;
        k += 4;
        if (v >= 0xD800 && v < 0xDC00) {
          uint32_t lo;
          if (k + 6 > s.size() || s[k] != '\\' || s[k + 1] != 'u' || !hex4(k + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF) return false;
          k += 6;
          v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
        }
        put_utf8(v, out);
        break;
      }
      default: return false;
    }
  }
  return false;
}

std::vector<std::string> lines_of(const std::string &path) {
  std::vector<std::string> lines;
  std::istringstream in(test::read_file(path));
  std::string line;
  while (std::getline(in, line, '\n')) lines.push_back(line);
  return lines;
}

// The strings of a corpus file (one JSON string per line).
std::vector<std::string> read_corpus(const char *name) {
  std::vector<std::string> out;
  for (const std::string &line : lines_of(data_path(name))) {
    size_t i = 0;
    std::string s;
    INFO(name << ": " << line);
    REQUIRE(parse_json_string(line, &i, &s));
    REQUIRE(i == line.size());
    out.push_back(s);
  }
  return out;
}

std::vector<std::string> pieces(PreTokenizer k, const std::string &s) {
  std::vector<std::pair<size_t, size_t>> p;
  REQUIRE(ml::pretokenize(k, s.data(), s.size(), &p) == ML_OK);
  std::vector<std::string> out;
  size_t at = 0;
  for (const auto &q : p) {
    REQUIRE(q.first == at);  // the pieces tile the input
    REQUIRE(q.second > q.first);
    out.push_back(s.substr(q.first, q.second - q.first));
    at = q.second;
  }
  REQUIRE(at == s.size());
  return out;
}

std::string nfc(const std::string &s) {
  std::string out = "junk";
  REQUIRE(ml::unicode::nfc(s.data(), s.size(), &out) == ML_OK);
  return out;
}

// A readable form of a string for failure messages.
std::string show(const std::string &s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    uint32_t cp;
    i += size_t(ml::unicode::utf8_next(s.data(), s.size(), i, &cp));
    if (cp >= 0x20 && cp < 0x7F && cp != '\\') {
      out.push_back(char(cp));
    } else {
      char buf[16];
      std::snprintf(buf, sizeof buf, "\\u{%x}", cp);
      out += buf;
    }
  }
  return out;
}
std::string show(const std::vector<std::string> &v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "|" : "") + show(v[i]);
  return out + "]";
}

}  // namespace

TEST_CASE("unicode: general category major class and White_Space", "[unicode]") {
  using namespace ml::unicode;
  struct Case {
    const char *name;
    uint32_t cp;
    Category cat;
    bool space;
  };
  const Case cases[] = {
      {"ASCII upper", 0x41, kLetter, false},        {"ASCII lower", 0x7A, kLetter, false},
      {"ASCII digit", 0x30, kNumber, false},        {"space", 0x20, kSeparator, true},
      {"tab (Cc)", 0x09, kOther, true},             {"LF", 0x0A, kOther, true},
      {"VT", 0x0B, kOther, true},                   {"CR", 0x0D, kOther, true},
      {"US 0x1F not space", 0x1F, kOther, false},   {"'!' Po", 0x21, kPunct, false},
      {"'$' Sc", 0x24, kSymbol, false},             {"'_' Pc", 0x5F, kPunct, false},
      {"'-' Pd", 0x2D, kPunct, false},              {"NEL U+0085: Cc, White_Space", 0x85, kOther, true},
      {"NBSP", 0xA0, kSeparator, true},             {"ordinal U+00AA Lo", 0xAA, kLetter, false},
      {"superscript two No", 0xB2, kNumber, false}, {"one half No", 0xBD, kNumber, false},
      {"combining acute Mn", 0x301, kMark, false},  {"unassigned U+0378", 0x378, kOther, false},
      {"Arabic-Indic three Nd", 0x663, kNumber, false}, {"roman nine Nl", 0x2168, kNumber, false},
      {"Mongolian vowel sep. (Cf since 6.3)", 0x180E, kOther, false},
      {"ogham space", 0x1680, kSeparator, true},    {"en quad", 0x2000, kSeparator, true},
      {"hair space", 0x200A, kSeparator, true},     {"ZWSP Cf not space", 0x200B, kOther, false},
      {"line separator Zl", 0x2028, kSeparator, true}, {"paragraph separator Zp", 0x2029, kSeparator, true},
      {"narrow NBSP", 0x202F, kSeparator, true},    {"medium math space", 0x205F, kSeparator, true},
      {"ideographic space", 0x3000, kSeparator, true}, {"CJK ext A first", 0x3400, kLetter, false},
      {"CJK ext A last", 0x4DBF, kLetter, false},   {"CJK", 0x4E2D, kLetter, false},
      {"Hangul syllable", 0xAC00, kLetter, false},  {"surrogate", 0xD800, kOther, false},
      {"private use", 0xE000, kOther, false},       {"BOM U+FEFF: Cf, not White_Space", 0xFEFF, kOther, false},
      {"fullwidth zero", 0xFF10, kNumber, false},   {"math bold digit", 0x1D7CE, kNumber, false},
      {"emoji So", 0x1F642, kSymbol, false},        {"CJK ext B first", 0x20000, kLetter, false},
      {"CJK ext B last", 0x2A6DF, kLetter, false},  {"after ext B (unassigned in 14.0)", 0x2A6E0, kOther, false},
      {"plane 16 private use", 0x10FFFD, kOther, false}, {"U+10FFFF", 0x10FFFF, kOther, false},
      {"past Unicode", 0x110000, kOther, false},    {"huge", 0xFFFFFFFF, kOther, false},
  };
  for (const Case &c : cases) {
    INFO(c.name << " U+" << std::hex << c.cp);
    CHECK(category(c.cp) == c.cat);
    CHECK(is_space(c.cp) == c.space);
    CHECK(is_letter(c.cp) == (c.cat == kLetter));
    CHECK(is_number(c.cp) == (c.cat == kNumber));
  }
  int spaces = 0;
  for (uint32_t cp = 0; cp <= 0x10FFFF; ++cp) spaces += is_space(cp);
  CHECK(spaces == 25);  // PropList.txt's White_Space: 25 code points
  CHECK(std::string(version()) == "14.0.0");
}

TEST_CASE("unicode: utf8_next decodes 1-4 byte characters and never reads past n", "[unicode]") {
  const std::string s = "a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x99\x82";  // a é 中 🙂
  uint32_t cp;
  CHECK(ml::unicode::utf8_next(s.data(), s.size(), 0, &cp) == 1);
  CHECK(cp == 0x61);
  CHECK(ml::unicode::utf8_next(s.data(), s.size(), 1, &cp) == 2);
  CHECK(cp == 0xE9);
  CHECK(ml::unicode::utf8_next(s.data(), s.size(), 3, &cp) == 3);
  CHECK(cp == 0x4E2D);
  CHECK(ml::unicode::utf8_next(s.data(), s.size(), 6, &cp) == 4);
  CHECK(cp == 0x1F642);
  CHECK(ml::unicode::utf8_next(s.data(), 8, 6, &cp) == 1);  // truncated (invalid) input: one byte
}

TEST_CASE("unicode: NFC named cases", "[unicode]") {
  struct Case {
    const char *name;
    const char *in;
    const char *out;
  };
  // Expectations from Python's unicodedata.normalize("NFC", in), Unicode 14.0.0.
  const Case cases[] = {
      {"empty", "", ""},
      {"ASCII unchanged", "Hello, world!\n\t123", "Hello, world!\n\t123"},
      {"already NFC unchanged", "caf\u00e9 \u65e5\u672c \ud55c\uad6d \U0001F642", "caf\u00e9 \u65e5\u672c \ud55c\uad6d \U0001F642"},
      {"e + acute composes", "e\u0301", "\u00e9"},
      {"composition after ASCII run", "Cafe\u0301 ok", "Caf\u00e9 ok"},
      {"two marks compose in turn", "a\u0308\u0304", "\u01df"},
      {"Hangul L V", "\u1100\u1161", "\uac00"},
      {"Hangul L V T", "\u1100\u1161\u11a8", "\uac01"},
      {"Hangul LV syllable + T", "\uac00\u11a8", "\uac01"},
      {"Hangul LVT + T does not compose", "\uac01\u11a8", "\uac01\u11a8"},
      {"Hangul L V T L", "\u1100\u1161\u11a8\u1100", "\uac01\u1100"},
      {"exclusion U+0958 stays decomposed", "\u0958", "\u0915\u093c"},
      {"decomposed exclusion not composed", "\u0915\u093c", "\u0915\u093c"},
      {"exclusion U+2ADC", "\u2adc", "\u2add\u0338"},
      {"non-starter decomposition U+0344", "\u0344", "\u0308\u0301"},
      {"non-starter decomposition U+0F73", "\u0f73", "\u0f71\u0f72"},
      {"singleton U+212B ANGSTROM -> U+00C5", "\u212b", "\u00c5"},
      {"singleton U+2126 OHM -> U+03A9", "\u2126", "\u03a9"},
      {"reordering: acute, dot below", "a\u0301\u0323", "\u1ea1\u0301"},
      {"reordering: dot below, acute", "a\u0323\u0301", "\u1ea1\u0301"},
      {"reordering without composition", "q\u0307\u0323", "q\u0323\u0307"},
      {"UAX15 example long s dot", "\u1e9b\u0323", "\u1e9b\u0323"},
      {"starter second (Bengali)", "\u09c7\u09be", "\u09cb"},
      {"leading mark", "\u0301a", "\u0301a"},
      {"Vietnamese", "Tie\u0302\u0301ng Vie\u0323\u0302t", "Ti\u1ebfng Vi\u1ec7t"},
  };
  for (const Case &c : cases) {
    INFO(c.name << ": " << show(c.in));
    CHECK(show(nfc(c.in)) == show(c.out));
  }
  // A long run of marks (the stable-sort path): 'a' + 40 × (acute 230, dot below 220).
  std::string in = "a", expect = "\u1ea1";
  for (int k = 0; k < 40; ++k) in += "\u0301\u0323";
  for (int k = 0; k < 39; ++k) expect += "\u0323";
  for (int k = 0; k < 40; ++k) expect += "\u0301";
  CHECK(show(nfc(in)) == show(expect));
}

TEST_CASE("unicode: NFC agrees with Python's unicodedata on nfc_expected.txt", "[unicode]") {
  int cases = 0, mismatches = 0;
  for (const std::string &line : lines_of(data_path("nfc_expected.txt"))) {
    size_t i = 0;
    std::string in, expect;
    INFO(line);
    REQUIRE(parse_json_string(line, &i, &in));
    REQUIRE(i < line.size());
    REQUIRE(line[i] == '\t');
    ++i;
    REQUIRE(parse_json_string(line, &i, &expect));
    const std::string got = nfc(in);
    ++cases;
    if (got != expect) {
      ++mismatches;
      if (mismatches <= 10) FAIL_CHECK("NFC " << show(in) << " = " << show(got) << ", Python says " << show(expect));
    }
    CHECK(nfc(got) == got);  // idempotent
  }
  CHECK(cases > 3000);
  CHECK(mismatches == 0);
}

TEST_CASE("pretokenize: named splits", "[unicode]") {
  struct Case {
    const char *name;
    PreTokenizer kind;
    const char *in;
    std::vector<std::string> out;
  };
  const PreTokenizer G = PreTokenizer::gpt2, L = PreTokenizer::llama3, Q = PreTokenizer::qwen2, S = PreTokenizer::smollm;
  const Case cases[] = {
      {"empty", L, "", {}},
      {"\\s+(?!\\S) backtracks one space", G, "a   b", {"a", "  ", " b"}},
      {"trailing spaces stay whole", G, "a   ", {"a", "   "}},
      {"gpt2 contractions are case-sensitive", G, "DON'T", {"DON", "'", "T"}},
      {"llama3 contractions are case-insensitive", L, "DON'T", {"DON", "'T"}},
      // (where letters follow, a case-sensitive match would take them too: mutant pretok_contraction)
      {"llama3 (?i:'t) before letters", L, "'Twas", {"'T", "was"}},
      {"qwen2 (?i:'s) before letters", Q, "IT'SELF", {"IT", "'S", "ELF"}},
      {"qwen2 mixed-case contraction", Q, "they'Re", {"they", "'Re"}},
      {"gpt2 contraction", G, "I'm fine", {"I", "'m", " fine"}},
      {"llama3 numbers in threes", L, "12345", {"123", "45"}},
      {"qwen2 single digits", Q, "12345", {"1", "2", "3", "4", "5"}},
      {"gpt2 numbers whole", G, "12345 x", {"12345", " x"}},
      {"smollm isolates digits", S, "abc 123", {"abc", " ", "1", "2", "3"}},
      {"smollm isolates every \\p{N}", S, "x\u00bd 42", {"x", "\u00bd", " ", "4", "2"}},
      {"llama3 newline run", L, "hello\n\nworld", {"hello", "\n\n", "world"}},
      {"llama3 \\s*[\\r\\n]+ then \\s+(?!\\S)", L, "a  \n  b", {"a", "  \n", " ", " b"}},
      {"llama3 punctuation takes newlines", L, "!!!\n\n", {"!!!\n\n"}},
      {"gpt2 punctuation then newlines", G, "!!!\n\n", {"!!!", "\n\n"}},
      {"llama3 (?i:'s) folds U+017F", L, "'\u017f", {"'\u017f"}},
      {"gpt2 'long s' is no contraction", G, "'\u017f", {"'", "\u017f"}},
      {"U+0085 is \\s", G, "a\u0085b", {"a", "\u0085", "b"}},
      {"U+0085 ends a space run", G, "a  \u0085b", {"a", "  ", "\u0085", "b"}},
      {"U+FEFF is not \\s (gpt2)", G, "\ufeffBOM", {"\ufeff", "BOM"}},
      {"U+FEFF is not \\s (llama3 prefix)", L, "\ufeffBOM", {"\ufeffBOM"}},
      {"llama3 tab prefix", L, "\tword", {"\tword"}},
      {"gpt2 tab apart", G, "\tword", {"\t", "word"}},
      {"llama3 space + CJK", L, " \u4e2d\u6587", {" \u4e2d\u6587"}},
      {"gpt2 combining mark splits a word", G, "e\u0301t\u00e9", {"e", "\u0301", "t\u00e9"}},
      {"llama3 mark as prefix", L, "\u0301abc", {"\u0301abc"}},
      {"gpt2 indentation", G, "    return x\n", {"   ", " return", " x", "\n"}},
      {"llama3 indentation", L, "    return x\n", {"   ", " return", " x", "\n"}},
      {"llama3 CRLF run", L, "x\r\n\r\n  y", {"x", "\r\n\r\n", " ", " y"}},
      {"qwen2 ChatML marker text", Q, "<|im_start|>user\n", {"<|", "im", "_start", "|>", "user", "\n"}},
  };
  for (const Case &c : cases) {
    INFO(c.name << " (" << ml::pretokenizer_name(c.kind) << "): " << show(c.in));
    CHECK(show(pieces(c.kind, c.in)) == show(c.out));
  }
}

TEST_CASE("pretokenize: node's regex engine agrees on the corpora (pretokenize_expected.txt)", "[unicode]") {
  const std::vector<std::string> corpus = read_corpus("tokenizer_corpus.txt");
  const std::vector<std::string> extra = read_corpus("pretokenize_extra_corpus.txt");
  CHECK(corpus.size() >= 300);
  int cases = 0, mismatches = 0;
  for (const std::string &line : lines_of(data_path("pretokenize_expected.txt"))) {
    if (line.empty() || line[0] == '#') continue;
    // corpus \t index \t family \t byte lengths
    std::vector<std::string> f;
    size_t at = 0;
    for (size_t t; (t = line.find('\t', at)) != std::string::npos; at = t + 1) f.push_back(line.substr(at, t - at));
    f.push_back(line.substr(at));
    INFO(line);
    REQUIRE(f.size() == 4);
    const std::vector<std::string> &texts = f[0] == "extra" ? extra : corpus;
    const size_t index = std::strtoul(f[1].c_str(), nullptr, 10);
    REQUIRE(index < texts.size());
    PreTokenizer kind = PreTokenizer::gpt2;
    bool known = false;
    for (int k = 0; k < ml::kPreTokenizerCount; ++k) {
      if (f[2] == ml::pretokenizer_name(PreTokenizer(k))) {
        kind = PreTokenizer(k);
        known = true;
      }
    }
    REQUIRE(known);
    const std::string &text = texts[index];
    std::vector<std::string> expect;
    size_t pos = 0;
    std::istringstream lens(f[3]);
    for (std::string len; std::getline(lens, len, ',');) {
      const size_t l = std::strtoul(len.c_str(), nullptr, 10);
      REQUIRE(pos + l <= text.size());
      expect.push_back(text.substr(pos, l));
      pos += l;
    }
    REQUIRE(pos == text.size());
    const std::vector<std::string> got = pieces(kind, text);
    ++cases;
    if (got != expect) {
      ++mismatches;
      if (mismatches <= 10) FAIL_CHECK(f[2] << " " << show(text) << ": ours " << show(got) << ", node " << show(expect));
    }
  }
  CHECK(cases == ml::kPreTokenizerCount * int(corpus.size() + extra.size()));
  CHECK(mismatches == 0);
}

TEST_CASE("pretokenize and nfc: long inputs stay linear", "[unicode]") {
  // Shapes that would be quadratic for a naive backtracking matcher or a naive canonical reorder;
  // each runs in a few milliseconds when linear.
  const size_t n = 200000;
  const std::string spaces(n, ' ');
  for (int k = 0; k < ml::kPreTokenizerCount; ++k) {
    CHECK(pieces(PreTokenizer(k), spaces).size() == 1);
    CHECK(pieces(PreTokenizer(k), spaces + "x").size() == 2);
  }
  std::string apostrophes(n, '\'');
  CHECK(pieces(PreTokenizer::llama3, apostrophes).size() == 1);
  std::string nl;
  for (size_t i = 0; i < n / 2; ++i) nl += " \n";
  CHECK(pieces(PreTokenizer::llama3, nl + "x").size() == 2);
  std::string marks = "a";
  for (size_t i = 0; i < n / 4; ++i) marks += "\u0301\u0323";
  const std::string out = nfc(marks);
  CHECK(out.size() == marks.size());
  CHECK(out.compare(0, 3, "\u1ea1") == 0);
}
