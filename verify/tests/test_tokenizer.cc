// The llama2.c tokenizer: encode as run.c does, decode(encode(s)) round trips, vocabulary mismatch.
#include <cstring>
#include <string>
#include <vector>

#include "runtime/file_map.h"
#include "runtime/text/tokenizer.h"
#include "verify/tests/common.h"

namespace {

struct Tok {
  ml::FileMap file;
  ml::Tokenizer tok;
  ml_status load(const std::string &path, int vocab) {
    const ml_status s = file.open(path.c_str(), "tokenizer");
    return s != ML_OK ? s : tok.load(file.data(), file.size(), vocab, path.c_str());
  }
  std::vector<int> encode(const std::string &text) {
    std::vector<int> ids(text.size() + 2);
    int n = 0;
    REQUIRE(tok.encode(text.c_str(), true, ids.data(), int(ids.size()), &n) == ML_OK);
    ids.resize(static_cast<size_t>(n));
    return ids;
  }
  std::string decode_all(const std::vector<int> &ids) {
    std::string out;
    for (size_t i = 1; i < ids.size(); ++i) out += tok.decode(ids[i - 1], ids[i]);
    return out;
  }
};

const char *kRoundTrip[] = {
    "Once upon a time, there was a little girl named Lily.",
    "Hello, world! 1234567890 (brackets) [and] {braces}",
    "  two leading spaces and trailing ones  ",
    "tabs\tand\nnewlines\r\n",
    "Ünïcödé — “quotes”, ñ, 日本語 and an emoji 🙂",
    "x",
};

}  // namespace

TEST_CASE("tok512.bin encodes like llama2.c and round trips", "[tokenizer]") {
  Tok t;
  REQUIRE(t.load(test::shared("models/stories260K/tok512.bin"), 512) == ML_OK);
  CHECK(t.encode("Once upon a time") == std::vector<int>{1, 403, 407, 261, 378});
  CHECK(t.encode("") == std::vector<int>{1});
  for (const char *s : kRoundTrip) {
    INFO("text: " << s);
    CHECK(t.decode_all(t.encode(s)) == s);
  }
}

TEST_CASE("the 32000-token llama2 tokenizer encodes like llama2.c and round trips", "[tokenizer]") {
  Tok t;
  REQUIRE(t.load(test::shared("models/llama2-tokenizer/tokenizer.bin"), 32000) == ML_OK);
  CHECK(t.encode("Once upon a time") == std::vector<int>{1, 9038, 2501, 263, 931});
  for (const char *s : kRoundTrip) {
    INFO("text: " << s);
    CHECK(t.decode_all(t.encode(s)) == s);
  }
}

TEST_CASE("a tokenizer that does not match the model's vocabulary is rejected", "[tokenizer]") {
  Tok small, large, cut;
  CHECK(small.load(test::shared("models/stories260K/tok512.bin"), 500) == ML_E_FORMAT);
  CHECK(std::string(ml_last_error()).find("larger vocabulary than the model") != std::string::npos);
  CHECK(large.load(test::shared("models/stories260K/tok512.bin"), 600) == ML_E_FORMAT);
  CHECK(std::string(ml_last_error()).find("ends after 512 tokens") != std::string::npos);
  const std::string bytes = test::read_file(test::shared("models/stories260K/tok512.bin"));
  CHECK(cut.tok.load(reinterpret_cast<const uint8_t *>(bytes.data()), 1000, 512, "cut") == ML_E_FORMAT);
}

TEST_CASE("invalid UTF-8 prompts are rejected", "[tokenizer]") {
  Tok t;
  REQUIRE(t.load(test::shared("models/stories260K/tok512.bin"), 512) == ML_OK);
  std::vector<int> ids(16);
  int n = 0;
  for (const char *bad : {"\xff", "abc\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf5\x80\x80\x80"}) {
    INFO("bytes: " << bad);
    CHECK(t.tok.encode(bad, true, ids.data(), 16, &n) == ML_E_ARG);
  }
  CHECK(t.tok.encode("abc", true, ids.data(), 2, &n) == ML_E_ARG);  // buffer too small
}
