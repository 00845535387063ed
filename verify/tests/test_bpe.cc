// The byte-level BPE tokenizer (runtime/text/bpe_tokenizer.h, docs/tokenizer-format.md): MLTK images
// built here in memory (Image below), then merge order, ignore_merges, special vs added tokens,
// NFC only when declared, BOS, decode and streaming of a split character, the C API with a model
// whose vocabulary is larger than the tokenizer, and one malformed image per loader rule.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include "runtime/text/bpe_tokenizer.h"
#include "runtime/error.h"
#include "runtime/text/tokenizer.h"
#include "verify/tests/common.h"

namespace {

// An MLTK v1 image under construction: token i < 256 is the single byte i (kind 0).
struct Image {
  uint8_t pretok = 0, norm = 0, flags = 0;
  int32_t bos = -1, eos = -1, eot = -1, pad = -1;
  std::vector<std::pair<uint8_t, std::string>> tokens;
  std::vector<std::array<int32_t, 3>> merges;
  std::vector<int32_t> stops;
  std::string tmpl;

  Image() {
    for (int b = 0; b < 256; ++b) tokens.push_back({0, std::string(1, char(b))});
  }
  int add(const std::string &bytes, uint8_t kind = 0) {
    tokens.push_back({kind, bytes});
    return int(tokens.size()) - 1;
  }
  int id(const std::string &bytes) const {  // a kind-0 token's id
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i].first == 0 && tokens[i].second == bytes) return int(i);
    return -1;
  }
  // Appends the merge rule left + right (kind-0 tokens with these bytes; the result is added when new).
  int merge(const std::string &l, const std::string &r) {
    int res = id(l + r);
    if (res < 0) res = add(l + r);
    merges.push_back({id(l), id(r), res});
    return res;
  }
  std::string bytes() const {
    std::string o;
    auto u8 = [&](unsigned v) { o.push_back(char(v & 0xFF)); };
    auto u32 = [&](uint32_t v) {
      for (int k = 0; k < 4; ++k) u8(v >> (8 * k));
    };
    o += "MLTK";
    u32(1);
    u32(uint32_t(tokens.size()));
    u32(uint32_t(merges.size()));
    u8(pretok), u8(norm), u8(flags), u8(0);
    for (int32_t v : {bos, eos, eot, pad}) u32(uint32_t(v));
    u32(uint32_t(stops.size()));
    u32(uint32_t(tmpl.size()));
    o.append(20, '\0');
    for (const auto &t : tokens) {
      u8(t.first);
      u8(unsigned(t.second.size())), u8(unsigned(t.second.size()) >> 8);
      o += t.second;
    }
    for (const auto &m : merges)
      for (int32_t v : m) u32(uint32_t(v));
    for (int32_t v : stops) u32(uint32_t(v));
    o += tmpl;
    return o;
  }
};

ml_status load(ml::BpeTokenizer &t, const std::string &img) {
  ml::clear_error();
  return t.load(reinterpret_cast<const uint8_t *>(img.data()), img.size(), "test.mltk");
}

std::vector<int> enc(ml::BpeTokenizer &t, const std::string &text, bool bos = false, bool special = true) {
  std::vector<int> ids;
  const ml_status s = t.encode(text.c_str(), bos, special, &ids);
  INFO(ml_last_error());
  REQUIRE(s == ML_OK);
  return ids;
}

std::vector<int> bytes_of(const std::string &s) {
  std::vector<int> v;
  for (unsigned char c : s) v.push_back(c);
  return v;
}

// The O(n^2) rule of docs/tokenizer-format.md step 5 written out plainly: repeatedly merge the
// adjacent pair of lowest rank, the leftmost among equal ranks.
std::vector<int> naive_bpe(const Image &img, const std::string &word) {
  std::vector<int> t = bytes_of(word);
  for (;;) {
    size_t best = 0;
    int best_rank = -1;
    for (size_t i = 0; i + 1 < t.size(); ++i)
      for (size_t r = 0; r < img.merges.size(); ++r)
        if (img.merges[r][0] == t[i] && img.merges[r][1] == t[i + 1]) {
          if (best_rank < 0 || int(r) < best_rank) best_rank = int(r), best = i;
          break;
        }
    if (best_rank < 0) return t;
    t[best] = img.merges[size_t(best_rank)][2];
    t.erase(t.begin() + long(best) + 1);
  }
}

bool error_names(const char *what) {
  const std::string e = ml_last_error();
  INFO("ml_last_error: " << e);
  CHECK(e.find('\n') == std::string::npos);
  return e.find(what) != std::string::npos;
}

}  // namespace

TEST_CASE("bpe: merges apply by rank, the leftmost first among equal ranks", "[bpe]") {
  Image img;
  const int bc = img.merge("b", "c");   // rank 0
  const int ab = img.merge("a", "b");   // rank 1: loses to bc in "abc"
  const int aa = img.merge("a", "a");   // rank 2
  const int aaaa = img.merge("aa", "aa");
  ml::BpeTokenizer t;
  REQUIRE(load(t, img.bytes()) == ML_OK);
  CHECK(enc(t, "abc") == std::vector<int>{'a', bc});
  CHECK(enc(t, "abd") == std::vector<int>{ab, 'd'});
  CHECK(enc(t, "aaa") == std::vector<int>{aa, 'a'});    // leftmost pair first
  CHECK(enc(t, "aaaaa") == std::vector<int>{aaaa, 'a'});
  CHECK(enc(t, "") == std::vector<int>{});
  CHECK(enc(t, "x") == std::vector<int>{'x'});
}

TEST_CASE("bpe: the heap encoder equals the plain O(n^2) rule on random vocabularies", "[bpe]") {
  uint64_t s = 12345;
  auto rnd = [&](uint32_t n) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return uint32_t(s % n);
  };
  int cases = 0;
  for (int v = 0; v < 20; ++v) {
    Image img;
    std::vector<std::string> have = {"a", "b", "c"};
    for (int m = 0; m < 40; ++m) {
      const std::string l = have[rnd(uint32_t(have.size()))], r = have[rnd(uint32_t(have.size()))];
      if (l.size() + r.size() > 8) continue;
      bool dup = false;
      for (const auto &mm : img.merges) dup |= mm[0] == img.id(l) && mm[1] == img.id(r);
      if (dup) continue;
      img.merge(l, r);
      if (std::find(have.begin(), have.end(), l + r) == have.end()) have.push_back(l + r);
    }
    ml::BpeTokenizer t;
    REQUIRE(load(t, img.bytes()) == ML_OK);
    for (int k = 0; k < 50; ++k) {
      std::string w;
      const uint32_t len = 1 + rnd(24);
      for (uint32_t i = 0; i < len; ++i) w.push_back(char('a' + rnd(3)));
      INFO("vocabulary " << v << ", word " << w);
      CHECK(enc(t, w) == naive_bpe(img, w));
      ++cases;
    }
  }
  CHECK(cases == 1000);
}

TEST_CASE("bpe: ignore_merges takes a pre-token that is a token whole", "[bpe]") {
  Image img;
  const int bc = img.merge("b", "c");
  const int abc = img.add("abc");  // no merge makes it
  ml::BpeTokenizer plain, whole;
  REQUIRE(load(plain, img.bytes()) == ML_OK);
  img.flags = 2;
  REQUIRE(load(whole, img.bytes()) == ML_OK);
  CHECK(enc(plain, "abc") == std::vector<int>{'a', bc});
  CHECK(enc(whole, "abc") == std::vector<int>{abc});
  CHECK(enc(whole, "abcd") == std::vector<int>{'a', bc, 'd'});
}

TEST_CASE("bpe: added tokens always split out, special tokens only with special parsing", "[bpe]") {
  Image img;
  const int sp = img.add("<|s|>", 1);
  const int add = img.add("<x>", 2);
  const int add_long = img.add("<x>y", 2);
  const int n_t = img.add("\xc3\xa9", 2);  // an added token holding a 2-byte character
  ml::BpeTokenizer t;
  REQUIRE(load(t, img.bytes()) == ML_OK);
  CHECK(enc(t, "a<|s|>b<x>c") == std::vector<int>{'a', sp, 'b', add, 'c'});
  CHECK(enc(t, "a<|s|>b<x>c", false, false) ==
        std::vector<int>{'a', '<', '|', 's', '|', '>', 'b', add, 'c'});
  CHECK(enc(t, "<x>yz") == std::vector<int>{add_long, 'z'});  // longest match first
  CHECK(enc(t, "<|s|><|s|>") == std::vector<int>{sp, sp});
  CHECK(enc(t, "<|s|") == bytes_of("<|s|"));
  CHECK(enc(t, "\xc3\xa9\xc3\xa9") == std::vector<int>{n_t, n_t});
}

TEST_CASE("bpe: BOS only when asked and the file's add_bos is set; stop ids and template kept", "[bpe]") {
  Image img;
  const int bos = img.add("<s>", 1), eos = img.add("</s>", 1), eot = img.add("<eot>", 1), extra = img.add("<x>", 1);
  img.bos = bos, img.eos = eos, img.eot = eot;
  img.stops = {extra, eos};
  img.tmpl = "{{ messages }}";
  ml::BpeTokenizer no_flag, flag;
  REQUIRE(load(no_flag, img.bytes()) == ML_OK);
  img.flags = 1;
  REQUIRE(load(flag, img.bytes()) == ML_OK);
  CHECK(enc(no_flag, "a", true) == std::vector<int>{'a'});
  CHECK(enc(flag, "a", true) == std::vector<int>{bos, 'a'});
  CHECK(enc(flag, "a", false) == std::vector<int>{'a'});
  CHECK(enc(flag, "", true) == std::vector<int>{bos});
  CHECK(flag.stop_ids() == std::vector<int>{eos, eot, extra});
  CHECK(flag.chat_template() == "{{ messages }}");
}

TEST_CASE("bpe: NFC is applied only when the tokenizer declares it, between special tokens", "[bpe]") {
  Image img;
  ml::BpeTokenizer none, nfc;
  REQUIRE(load(none, img.bytes()) == ML_OK);
  img.norm = 1;
  REQUIRE(load(nfc, img.bytes()) == ML_OK);
  const std::string nfd = "e\xcc\x81";  // e + COMBINING ACUTE ACCENT
  CHECK(enc(none, nfd) == bytes_of(nfd));
  CHECK(enc(nfc, nfd) == bytes_of("\xc3\xa9"));  // U+00E9
  CHECK(enc(nfc, "plain ascii") == bytes_of("plain ascii"));
  // Special tokens are matched in the text as given, NFC applies between them: ">" + U+0338
  // would compose to U+226F, but the mark after a special token stays a piece of its own.
  Image sp_img;
  sp_img.norm = 1;
  const int sp = sp_img.add("<|s|>", 1);
  ml::BpeTokenizer sp_nfc;
  REQUIRE(load(sp_nfc, sp_img.bytes()) == ML_OK);
  std::vector<int> want = {sp};
  for (int b : bytes_of("\xcc\xb8 \xc3\xa9")) want.push_back(b);
  CHECK(enc(sp_nfc, "<|s|>\xcc\xb8 e\xcc\x81") == want);
  CHECK(enc(sp_nfc, "<|s|>\xcc\xb8", false, false) == bytes_of("<|s|\xe2\x89\xaf"));  // not split: NFC composes
  CHECK(nfc.max_tokens(3) == 10);
  CHECK(none.max_tokens(3) == 4);
}

TEST_CASE("bpe: decode gives token bytes; a 4-byte character split across tokens streams once, whole", "[bpe]") {
  Image img;
  const int lead = img.merge("\xf0", "\x9f");  // U+1F642 = F0 9F 99 82
  const int tail = img.merge("\x99", "\x82");
  const int absent = img.add("", 3);
  ml::BpeTokenizer t;
  REQUIRE(load(t, img.bytes()) == ML_OK);
  const std::vector<int> ids = enc(t, "\xf0\x9f\x99\x82!");
  REQUIRE(ids == std::vector<int>{lead, tail, '!'});
  ml_text_stream st{};
  std::string shown;
  std::vector<size_t> per_piece;
  for (int id : ids) {
    size_t len = 0;
    const char *p = t.decode(id, &len);
    char out[16];
    const size_t n = ml_text_stream_feed(&st, p, out);
    shown.append(out, n);
    per_piece.push_back(n);
  }
  CHECK(per_piece == std::vector<size_t>{0, 4, 1});
  CHECK(shown == "\xf0\x9f\x99\x82!");
  CHECK(std::string(t.decode(absent)).empty());
  CHECK(std::string(t.decode(t.n_tokens())).empty());
}

TEST_CASE("bpe: invalid UTF-8 text is ML_E_ARG", "[bpe]") {
  Image img;
  ml::BpeTokenizer t;
  REQUIRE(load(t, img.bytes()) == ML_OK);
  std::vector<int> ids;
  for (const char *bad : {"\xff", "abc\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf5\x80\x80\x80"}) {
    CHECK(t.encode(bad, false, true, &ids) == ML_E_ARG);
    CHECK(error_names("UTF-8"));
  }
}

TEST_CASE("bpe: malformed images are rejected with the field named", "[bpe]") {
  Image base;
  base.merge("a", "b");
  base.add("<s>", 1);
  base.bos = base.eos = 256 + 1;
  base.stops = {97};
  base.tmpl = "T";
  const std::string good = base.bytes();
  ml::BpeTokenizer t;
  REQUIRE(load(t, good) == ML_OK);
  auto put = [](std::string img, size_t off, uint32_t v, int n = 4) {
    std::string b;
    for (int k = 0; k < n; ++k) b.push_back(char((v >> (8 * k)) & 0xFF));
    return img.replace(off, size_t(n), b);
  };
  struct Case {
    const char *name;
    std::string img;
    const char *field;
  };
  const size_t tok0 = 64;  // token 0: kind, u16 length, 1 byte
  const size_t merges_off = good.size() - 1 - 4 - 12;
  std::vector<Case> cases = {
      {"bad magic", put(good, 0, 0x4B544C4E), "magic"},
      {"bad version", put(good, 4, 2), "version 2"},
      {"n_tokens 0", put(good, 8, 0), "n_tokens"},
      {"n_tokens huge", put(good, 8, 1u << 25), "n_tokens"},
      {"n_merges huge", put(good, 12, 1u << 30), "n_merges"},
      {"pretokenizer 4", put(good, 16, 4, 1), "pretokenizer"},
      {"normalizer 2", put(good, 17, 2, 1), "normalizer"},
      {"flags bit 2", put(good, 18, 4, 1), "flags"},
      {"reserved byte 19", put(good, 19, 1, 1), "reserved byte 19"},
      {"bos out of range", put(good, 20, 9999), "bos_id"},
      {"eos -2", put(good, 24, uint32_t(-2)), "eos_id"},
      {"eot out of range", put(good, 28, 258), "eot_id"},
      {"pad out of range", put(good, 32, 258), "pad_id"},
      {"n_stop 65", put(good, 36, 65), "n_stop"},
      {"template_bytes huge", put(good, 40, (1u << 20) + 1), "template_bytes"},
      {"reserved header", put(good, 50, 1, 1), "reserved header byte 50"},
      {"token kind 4", put(good, tok0, 4, 1), "token 0's kind 4"},
      {"empty normal token", put(put(good, tok0 + 1, 0, 2), tok0, 0, 1), "token 0"},
      {"duplicate byte token", put(good, tok0 + 3, 'b', 1), "same bytes as token"},
      {"merge result mismatch", put(good, merges_off + 8, 97), "merge 0's result id 97 is not left||right"},
      {"merge left out of range", put(good, merges_off, 5000), "merge 0's left id 5000"},
      {"merge of a special token", put(good, merges_off + 4, 257), "merge 0's right id 257 is a special token"},
      {"stop id out of range", put(good, good.size() - 5, 777), "stop id 0 = 777"},
      {"truncated", good.substr(0, good.size() - 1), "chat template"},
      {"trailing bytes", good + "x", "after its last section"},
      {"short header", good.substr(0, 40), "too short"},
  };
  {
    Image no_byte;
    no_byte.tokens[7].second = "ab";  // byte 0x07 has no token
    cases.push_back({"missing byte token", no_byte.bytes(), "single byte 0x07"});
    Image absent_len;
    absent_len.add("x", 3);
    cases.push_back({"absent token with bytes", absent_len.bytes(), "absent (kind 3) but its length is 1"});
    Image bad_special;
    bad_special.add("\xff", 1);
    cases.push_back({"special token not UTF-8", bad_special.bytes(), "not valid UTF-8"});
    Image dup;
    dup.merge("a", "b");
    dup.merges.push_back(dup.merges[0]);
    cases.push_back({"repeated merge", dup.bytes(), "merge 1 repeats the pair"});
  }
  for (const Case &c : cases) {
    INFO(c.name);
    CHECK(load(t, c.img) == ML_E_FORMAT);
    CHECK(error_names(c.field));
  }
  // Every truncation is refused cleanly.
  for (size_t n = 0; n < good.size(); ++n) {
    INFO("truncated to " << n << " bytes");
    CHECK(load(t, good.substr(0, n)) == ML_E_FORMAT);
  }
}

TEST_CASE("bpe: one Tokenizer API for both kinds; llama2.c files standalone count their tokens", "[bpe]") {
  Image img;
  img.merge("a", "b");
  const std::string bytes = img.bytes();
  ml::Tokenizer t;
  REQUIRE(t.load(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(), 300, "t.mltk") == ML_OK);
  CHECK(t.kind() == ml::Tokenizer::kByteLevel);
  CHECK(t.vocab() == 300);
  CHECK(t.n_tokens() == 257);
  CHECK(std::string(t.decode(0, 299)).empty());
  CHECK(t.decode(0, 300) == nullptr);
  CHECK(t.decode(0, -1) == nullptr);
  int ids[4], n = 0;
  CHECK(t.encode("abab", true, ids, 1, &n) == ML_E_ARG);
  CHECK(n == 2);
  CHECK(t.encode("abab", true, ids, 2, &n) == ML_OK);
  CHECK(n == 2);
  CHECK(t.load(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(), 256, "t.mltk") == ML_E_FORMAT);
  CHECK(error_names("257 tokens but the model's vocab is 256"));
  CHECK(t.load(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(), 0, "t.mltk") == ML_OK);
  CHECK(t.vocab() == 257);

  // A llama2.c tokenizer.bin of 3 tokens, standalone (vocab 0): the loader counts them.
  std::string l2;
  auto i32 = [&](int32_t v) { l2.append(reinterpret_cast<const char *>(&v), 4); };
  i32(2);
  for (const char *p : {"a", "bc", "d"}) {
    const float score = 0;
    l2.append(reinterpret_cast<const char *>(&score), 4);
    i32(int32_t(std::strlen(p)));
    l2 += p;
  }
  ml::Tokenizer l;
  REQUIRE(l.load(reinterpret_cast<const uint8_t *>(l2.data()), l2.size(), 0, "l2.bin") == ML_OK);
  CHECK(l.kind() == ml::Tokenizer::kLlama2);
  CHECK(l.vocab() == 3);
  CHECK(l.load(reinterpret_cast<const uint8_t *>(l2.data()), l2.size() - 1, 0, "l2.bin") == ML_E_FORMAT);
}

TEST_CASE("bpe: ml_open takes a byte-level tokenizer smaller than the model's vocabulary", "[bpe]") {
  const std::string model = test::models("random_gqa_q8_0.mlb");  // vocab 512
  Image img;
  const int ab = img.merge("a", "b");
  const int im_end = img.add("<|im_end|>", 1);
  img.eos = im_end;
  img.eot = im_end;
  img.norm = 1;
  img.tmpl = "{% for m in messages %}<|im_start|>{% endfor %}";
  char path[] = "/tmp/ml_test_bpe_XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  const std::string bytes = img.bytes();
  REQUIRE(write(fd, bytes.data(), bytes.size()) == ssize_t(bytes.size()));
  close(fd);
  ml_ctx *ctx = nullptr;
  const ml_status s = ml_open(&ctx, model.c_str(), path, nullptr);
  INFO(ml_last_error());
  REQUIRE(s == ML_OK);
  ml_tokenizer_info ti;
  REQUIRE(ml_get_tokenizer_info(ctx, &ti) == ML_OK);
  CHECK(ti.kind == 1);
  CHECK(ti.n_tokens == 258);
  CHECK(ti.bos_id == -1);
  CHECK(ti.eos_id == im_end);
  CHECK(ti.eot_id == im_end);
  CHECK(ti.n_stop == 1);
  CHECK(ti.stop_ids[0] == im_end);
  CHECK(ti.normalizer == 1);
  CHECK(std::string(ti.chat_template) == img.tmpl);
  CHECK(ml_encode_bound(ctx, 5) == 16);
  int ids[32], n = 0;
  REQUIRE(ml_encode(ctx, "ab<|im_end|>", 1, ids, 32, &n) == ML_OK);
  CHECK(std::vector<int>(ids, ids + n) == std::vector<int>{ab, im_end});
  REQUIRE(ml_encode_ex(ctx, "ab<|im_end|>", 0, ids, 32, &n) == ML_OK);
  CHECK(n == 1 + 10);  // "ab", then <|im_end|> as 10 byte tokens
  CHECK(ml_encode_ex(ctx, "ab<|im_end|>", ML_ENCODE_SPECIAL, nullptr, 0, &n) == ML_E_ARG);
  CHECK(n == 2);
  CHECK(ml_encode_ex(ctx, "ab", 4, ids, 32, &n) == ML_E_ARG);
  CHECK(ml_encode(ctx, "\xc3", 1, ids, 32, &n) == ML_E_ARG);
  CHECK(std::string(ml_decode(ctx, 0, ab)) == "ab");
  CHECK(std::string(ml_decode(ctx, 0, 400)).empty());  // past the tokenizer, inside the model
  CHECK(ml_decode(ctx, 0, 512) == nullptr);
  ml_close(ctx);

  ctx = nullptr;
  CHECK(ml_open(&ctx, test::models("tiny_q8_0.mlb").c_str(), path, nullptr) == ML_E_FORMAT);  // vocab 64
  CHECK(error_names("258 tokens but the model's vocab is 64"));
  std::remove(path);
}

TEST_CASE("bpe: Qwen2 takes digits one at a time even when the vocabulary merges them", "[bpe]") {
  // Real Qwen vocabularies have no multi-digit tokens; this one does, so only the pre-tokenizer's
  // \p{N} (one digit a piece) keeps "2024" four tokens. Llama 3's \p{N}{1,3} merges within threes.
  Image img;
  const int d20 = img.merge("2", "0");
  const int d202 = img.merge("20", "2");
  img.merge("202", "4");
  ml::BpeTokenizer qwen, llama3;
  img.pretok = 2;  // qwen2
  REQUIRE(load(qwen, img.bytes()) == ML_OK);
  img.pretok = 1;  // llama3
  REQUIRE(load(llama3, img.bytes()) == ML_OK);
  CHECK(enc(qwen, "2024") == bytes_of("2024"));
  CHECK(enc(qwen, "a 202 20") == bytes_of("a 202 20"));
  CHECK(enc(llama3, "2024") == std::vector<int>{d202, '4'});
  CHECK(enc(llama3, "20 4") == std::vector<int>{d20, ' ', '4'});
}

namespace {

// An MLTK file of `img` in /tmp, removed when the object goes.
struct TempMltk {
  char path[32] = "/tmp/ml_test_bpe_XXXXXX";
  explicit TempMltk(const Image &img) {
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    const std::string bytes = img.bytes();
    REQUIRE(write(fd, bytes.data(), bytes.size()) == ssize_t(bytes.size()));
    close(fd);
  }
  ~TempMltk() { std::remove(path); }
};

std::vector<int> chat_stops(ml_ctx *ctx, ml_chat_format f) {
  const int *ids = nullptr;
  int n = 0;
  const ml_status s = ml_chat_stop_ids(ctx, f, &ids, &n);
  INFO(ml_last_error());
  REQUIRE(s == ML_OK);
  std::vector<int> v(ids, ids + n);
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

TEST_CASE("bpe: a chat reply ends at its format's end of turn even when the tokenizer names no EOT", "[bpe]") {
  // What the converter writes when the template's end-of-turn token is not marked special: EOS is
  // <|endoftext|> / <|end_of_text|>, EOT unset, the turn markers added tokens. A reply must still
  // stop at <|im_end|> (ChatML) and <|eot_id|> (Llama 3), and the opening markers must not stop it.
  const std::string model = test::models("random_gqa_q8_0.mlb");  // vocab 512
  SECTION("ChatML (Qwen2.5 base-style tokenizer)") {
    Image img;
    const int eot_text = img.add("<|endoftext|>", 1);
    const int start = img.add("<|im_start|>", 2);
    const int end = img.add("<|im_end|>", 2);
    img.eos = eot_text;
    img.tmpl = "{% for m in messages %}<|im_start|>{{ m.content }}<|im_end|>{% endfor %}";
    TempMltk f(img);
    ml_ctx *ctx = nullptr;
    REQUIRE(ml_open(&ctx, model.c_str(), f.path, nullptr) == ML_OK);
    ml_chat_format fmt = ML_CHAT_UNKNOWN;
    REQUIRE(ml_chat_detect(ctx, &fmt) == ML_OK);
    CHECK(fmt == ML_CHAT_CHATML);
    const std::vector<int> stops = chat_stops(ctx, ML_CHAT_CHATML);
    CHECK(stops == std::vector<int>{eot_text, end});
    CHECK(std::find(stops.begin(), stops.end(), start) == stops.end());
    // Zephyr and Llama 2 end at EOS; Llama 3 needs markers this tokenizer lacks.
    CHECK(chat_stops(ctx, ML_CHAT_ZEPHYR) == std::vector<int>{eot_text});
    const int *ids = nullptr;
    int n = 0;
    CHECK(ml_chat_stop_ids(ctx, ML_CHAT_LLAMA3, &ids, &n) == ML_E_FORMAT);
    CHECK(error_names("<|start_header_id|>"));
    ml_close(ctx);
  }
  SECTION("Llama 3 (base-style tokenizer)") {
    Image img;
    const int bos = img.add("<|begin_of_text|>", 1);
    const int eos = img.add("<|end_of_text|>", 1);
    const int sh = img.add("<|start_header_id|>", 2);
    const int eh = img.add("<|end_header_id|>", 2);
    const int eot = img.add("<|eot_id|>", 2);
    img.bos = bos;
    img.eos = eos;
    TempMltk f(img);
    ml_ctx *ctx = nullptr;
    REQUIRE(ml_open(&ctx, model.c_str(), f.path, nullptr) == ML_OK);
    const std::vector<int> stops = chat_stops(ctx, ML_CHAT_LLAMA3);
    CHECK(stops == std::vector<int>{eos, eot});
    CHECK(std::find(stops.begin(), stops.end(), sh) == stops.end());
    CHECK(std::find(stops.begin(), stops.end(), eh) == stops.end());
    const int *ids = nullptr;
    int n = 0;
    CHECK(ml_chat_stop_ids(ctx, ML_CHAT_CHATML, &ids, &n) == ML_E_FORMAT);  // no <|im_start|> here
    CHECK(error_names("<|im_start|>"));
    ml_close(ctx);
  }
}
