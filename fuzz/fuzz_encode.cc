// Fuzz target: tokenizer encode (runtime/text/tokenizer.cc Tokenizer::encode) on arbitrary bytes as
// the prompt, against two valid small vocabularies compiled in by cmake/fuzz.cmake (both written
// by fuzz/gen_corpus.py): a llama2.c-layout one (fuzz/data/encode_tokenizer.bin) and a byte-level
// MLTK one (fuzz/data/encode_tokenizer.mltk: qwen2 pre-tokenizer, NFC, BOS, special and added
// tokens).
//
// The prompt is the input up to its first NUL (a C string, as ml_encode takes it). Properties:
//   - invalid UTF-8 is refused with ML_E_ARG and one line, valid UTF-8 always encodes: checked
//     against an independent validator written from RFC 3629 (fuzz/fuzz_common.h);
//   - llama2.c: BOS first, every id inside the vocab, at most strlen + 2 ids, into an
//     exactly-sized buffer; the same ids as llama2.c's encode written out plainly
//     (fuzz/encode_oracle.h), for prompts up to kOracleBytes (the oracle is O(n^2));
//     decode(encode(s)) == s (the vocabulary has every byte token and " ", so this is exact);
//     ml_text_stream_feed over the decoded pieces gives s without its control bytes other than
//     \t \n \r \f \v (ml_run's stdout), and never writes past strlen(piece) + 4;
//   - byte-level, with and without special parsing: BOS first, ids < n_tokens, at most
//     max_tokens(strlen) of them; the same ids as the plain byte-level oracle
//     (fuzz/encode_oracle.h) up to kOracleBytes; NFC(the tokens' bytes) = NFC(s); the text stream
//     gives them without one-byte control pieces, never past strlen(piece) + 4.
#include <string>
#include <vector>

#include "fuzz/encode_oracle.h"
#include "fuzz/fuzz_common.h"
#include "runtime/error.h"
#include "runtime/text/tokenizer.h"
#include "runtime/text/unicode.h"

namespace {

constexpr size_t kOracleBytes = 256;

const uint8_t kTokenizer[] = {
#include "fuzz_encode_tokenizer.inc"
};
const uint8_t kMltk[] = {
#include "fuzz_encode_tokenizer_mltk.inc"
};

bool keeps(unsigned char c) {  // what ml_text_stream_feed passes through for a one-byte piece
  return c >= 0x80 || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || (c >= 0x20 && c != 0x7F);
}

ml::Tokenizer *tokenizer() {
  static ml::Tokenizer *tok = [] {
    auto *t = new ml::Tokenizer();
    const uint8_t *p = kTokenizer;
    // The vocab is the number of tokens in the file: count them.
    int vocab = 0;
    size_t off = 4;
    while (off + 8 <= sizeof kTokenizer) {
      int32_t len;
      std::memcpy(&len, p + off + 4, 4);
      off += 8 + static_cast<size_t>(len);
      ++vocab;
    }
    if (t->load(p, sizeof kTokenizer, vocab, "encode_tokenizer.bin") != ML_OK) mlfuzz::violated("load", ml_last_error());
    return t;
  }();
  return tok;
}

ml::Tokenizer *mltk() {
  static ml::Tokenizer *tok = [] {
    auto *t = new ml::Tokenizer();
    if (t->load(kMltk, sizeof kMltk, 0, "encode_tokenizer.mltk") != ML_OK) mlfuzz::violated("load", ml_last_error());
    return t;
  }();
  return tok;
}

void check_bpe(const std::string &text, bool valid) {
  ml::Tokenizer &tok = *mltk();
  const ml::BpeTokenizer &b = tok.bpe();
  static const mlfuzz::ByteLevelOracle oracle(b);
  for (bool special : {true, false}) {
    std::vector<int> ids(tok.max_tokens(text.size()));
    int n = -1;
    ml::clear_error();
    const ml_status s = tok.encode(text.c_str(), true, special, ids.data(), static_cast<int>(ids.size()), &n);
    if (s != ML_OK) {
      mlfuzz::check_error_line(s);
      ML_FUZZ_CHECK(s == ML_E_ARG && !valid, ml_last_error());
      ML_FUZZ_CHECK(std::strstr(ml_last_error(), "UTF-8") != nullptr, ml_last_error());
      continue;
    }
    ML_FUZZ_CHECK(valid, "byte-level: invalid UTF-8 was accepted");
    ML_FUZZ_CHECK(n >= 1 && ids[0] == b.bos_id(), "byte-level BOS");
    if (text.size() <= kOracleBytes) {
      std::vector<int> want;
      ML_FUZZ_CHECK(oracle.encode(text, true, special, &want), "the byte-level oracle refused valid UTF-8");
      ML_FUZZ_CHECK(std::vector<int>(ids.begin(), ids.begin() + n) == want, "ids differ from the byte-level oracle");
    }
    std::string joined, streamed, expected;
    ml_text_stream stream{};
    for (int i = 1; i < n; ++i) {
      const int id = ids[size_t(i)];
      ML_FUZZ_CHECK(id >= 0 && id < b.n_tokens(), "byte-level id in the tokenizer");
      const char *piece = tok.decode(ids[size_t(i) - 1], id);
      ML_FUZZ_CHECK(piece != nullptr, "byte-level decode");
      const size_t plen = std::strlen(piece);
      joined.append(piece, plen);
      if (!(plen == 1 && !keeps(static_cast<unsigned char>(piece[0])))) expected.append(piece, plen);
      std::vector<char> out(plen + 4);
      const size_t k = ml_text_stream_feed(&stream, piece, out.data());
      ML_FUZZ_CHECK(k <= plen + 4, "text stream output size");
      streamed.append(out.data(), k);
    }
    std::string norm, norm_joined;  // NFC applies between the special tokens: NFC(joined) = NFC(text)
    ML_FUZZ_CHECK(ml::unicode::nfc(text.data(), text.size(), &norm) == ML_OK, "nfc");
    ML_FUZZ_CHECK(ml::unicode::nfc(joined.data(), joined.size(), &norm_joined) == ML_OK, "nfc");
    ML_FUZZ_CHECK(norm_joined == norm, "byte-level: NFC(the tokens' bytes) is not NFC(text)");
    ML_FUZZ_CHECK(streamed == expected, "byte-level: text stream output");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ml::Tokenizer &tok = *tokenizer();
  const std::string text(reinterpret_cast<const char *>(data), strnlen(reinterpret_cast<const char *>(data), size));
  const size_t len = text.size();
  std::vector<int> ids(len + 2);
  int n = -1;
  ml::clear_error();
  const ml_status s = tok.encode(text.c_str(), true, ids.data(), static_cast<int>(ids.size()), &n);
  const bool valid = mlfuzz::rfc3629_valid(reinterpret_cast<const unsigned char *>(text.data()), len);
  check_bpe(text, valid);
  mlfuzz::g_accepted = s == ML_OK;
  if (s != ML_OK) {
    mlfuzz::check_error_line(s);
    ML_FUZZ_CHECK(s == ML_E_ARG, ml_last_error());
    ML_FUZZ_CHECK(!valid, "valid UTF-8 was refused");
    ML_FUZZ_CHECK(std::strstr(ml_last_error(), "UTF-8") != nullptr, ml_last_error());
    return 0;
  }
  ML_FUZZ_CHECK(valid, "invalid UTF-8 was accepted");
  ML_FUZZ_CHECK(n >= 1 && static_cast<size_t>(n) <= len + 2 && ids[0] == 1, "token count and BOS");
  if (len <= kOracleBytes) {
    static const mlfuzz::EncodeOracle oracle(tok);
    std::vector<int> want;
    ML_FUZZ_CHECK(oracle.encode(text, true, &want), "the oracle refused valid UTF-8");
    ML_FUZZ_CHECK(std::vector<int>(ids.begin(), ids.begin() + n) == want, "ids differ from llama2.c's encode");
  }
  std::string decoded, streamed, expected;
  ml_text_stream stream{};
  for (int i = 1; i < n; ++i) {
    const int id = ids[size_t(i)];
    ML_FUZZ_CHECK(id >= 0 && id < tok.vocab(), "token id in the vocab");
    const char *piece = tok.decode(ids[size_t(i) - 1], id);
    ML_FUZZ_CHECK(piece != nullptr, "decode");
    // <0x00> decodes to "" (a C string); the prompt has no NUL, so it never appears.
    const size_t plen = std::strlen(piece);
    decoded += piece;
    std::vector<char> out(plen + 4);
    const size_t k = ml_text_stream_feed(&stream, piece, out.data());
    ML_FUZZ_CHECK(k <= plen + 4, "text stream output size");
    streamed.append(out.data(), k);
  }
  ML_FUZZ_CHECK(decoded == text, "decode(encode(s)) != s");
  for (unsigned char c : text)
    if (keeps(c)) expected += static_cast<char>(c);
  ML_FUZZ_CHECK(streamed == expected, "text stream output != the prompt without control bytes");
  return 0;
}
