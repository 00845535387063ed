// Fuzz target: the tokenizer loader (runtime/text/tokenizer.cc Tokenizer::load) for both kinds of file
// (docs/tokenizer-format.md), then decode, the text stream (ml_text_stream_feed) and encode with
// the loaded, hostile vocabulary.
//
// Input: u16 little-endian vocab (the model's vocab, which tokenizer.bin does not store; 0 = a
// tokenizer on its own), then the tokenizer bytes: a llama2.c tokenizer.bin or an MLTK image
// (fuzz/corpus/tokenizer/, written by fuzz/gen_corpus.py).
// Properties: no crash, no read outside the input or the buffers (exactly-sized heap copies);
// rejection = ML_E_FORMAT with one line; after a successful load every id decodes to a string,
// ids outside the vocab decode to NULL, the text stream never writes past strlen(piece) + 4.
// llama2.c: encode either fails cleanly or returns ids inside the vocab, at most strlen + 2 of
// them, the same as llama2.c's encode written out plainly (fuzz/encode_oracle.h) with this
// vocabulary (duplicate pieces, NaN and equal scores, empty pieces, no byte tokens ...).
// MLTK: n_tokens <= vocab; ids in [n_tokens, vocab) and absent tokens decode to ""; encode (with
// and without special parsing) gives ids < n_tokens, the same as the plain byte-level oracle
// (fuzz/encode_oracle.h), and its tokens' bytes are the text (up to NFC when declared).
#include <cstring>
#include <string>
#include <vector>

#include "fuzz/encode_oracle.h"
#include "fuzz/fuzz_common.h"
#include "runtime/error.h"
#include "runtime/text/tokenizer.h"
#include "runtime/text/unicode.h"

namespace {

const char *const kPrompts[] = {
    "", "a", " ", "Once upon a time", "ab ab  ab", "\xc3\xa9\xe4\xbd\xa0\xf0\x9f\x99\x82", "<0x41>", "\t\n",
};

void encode_one(ml::Tokenizer &tok, const mlfuzz::EncodeOracle &oracle, const char *text, int vocab) {
  const size_t len = std::strlen(text);
  std::vector<int> ids(len + 2);
  int n = -1;
  ml::clear_error();
  const ml_status s = tok.encode(text, true, ids.data(), static_cast<int>(ids.size()), &n);
  std::vector<int> want;
  const bool oracle_ok = oracle.encode(text, true, &want);
  if (s != ML_OK) {
    mlfuzz::check_error_line(s);
    ML_FUZZ_CHECK(s == ML_E_ARG, ml_last_error());
    ML_FUZZ_CHECK(!oracle_ok, "refused a text llama2.c's encode takes");
    return;
  }
  ML_FUZZ_CHECK(oracle_ok, "encoded a text llama2.c's encode refuses");
  ML_FUZZ_CHECK(std::vector<int>(ids.begin(), ids.begin() + n) == want, "ids differ from llama2.c's encode");
  ML_FUZZ_CHECK(n >= 1 && static_cast<size_t>(n) <= len + 2, "token count");
  for (int i = 0; i < n; ++i) ML_FUZZ_CHECK(ids[size_t(i)] >= 0 && ids[size_t(i)] < vocab, "token id in the vocab");
  // A buffer one entry too small is refused, never overrun.
  std::vector<int> small(len + 1);
  ML_FUZZ_CHECK(tok.encode(text, true, small.data(), static_cast<int>(small.size()), &n) == ML_E_ARG, "small buffer");
}

void encode_bpe(ml::Tokenizer &tok, const mlfuzz::ByteLevelOracle &oracle, const std::string &text) {
  const ml::BpeTokenizer &b = tok.bpe();
  for (bool special : {true, false}) {
    std::vector<int> ids(tok.max_tokens(text.size()));
    int n = -1;
    ml::clear_error();
    const ml_status s = tok.encode(text.c_str(), true, special, ids.data(), static_cast<int>(ids.size()), &n);
    std::vector<int> want;
    const bool oracle_ok = oracle.encode(text, true, special, &want);
    if (s != ML_OK) {
      mlfuzz::check_error_line(s);
      ML_FUZZ_CHECK(s == ML_E_ARG && !oracle_ok, ml_last_error());
      continue;
    }
    ML_FUZZ_CHECK(oracle_ok, "encoded a text the byte-level oracle refuses");
    ML_FUZZ_CHECK(std::vector<int>(ids.begin(), ids.begin() + n) == want, "ids differ from the byte-level oracle");
    std::string joined;
    for (int i = 0; i < n; ++i) {
      ML_FUZZ_CHECK(ids[size_t(i)] >= 0 && ids[size_t(i)] < b.n_tokens(), "token id in the tokenizer");
      if (i == 0 && b.add_bos() && b.bos_id() >= 0) continue;
      joined += oracle.bytes(ids[size_t(i)]);
    }
    if (b.normalizer() == 1) {  // NFC applies between the special tokens: NFC(joined) = NFC(text)
      std::string a, c;
      ML_FUZZ_CHECK(ml::unicode::nfc(text.data(), text.size(), &a) == ML_OK, "nfc");
      ML_FUZZ_CHECK(ml::unicode::nfc(joined.data(), joined.size(), &c) == ML_OK, "nfc");
      ML_FUZZ_CHECK(a == c, "the tokens' bytes are not the text, up to NFC");
    } else {
      ML_FUZZ_CHECK(joined == text, "the tokens' bytes are not the text");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlfuzz::g_accepted = -1;
  if (size < 2) return 0;
  const int model_vocab = data[0] | data[1] << 8;  // 0: the tokenizer on its own
  mlfuzz::AlignedCopy buf(data + 2, size - 2);
  ml::Tokenizer tok;
  ml::clear_error();
  const ml_status s = tok.load(buf.data(), buf.size(), model_vocab, "fuzz.bin");
  mlfuzz::g_accepted = s == ML_OK;
  if (s != ML_OK) {
    mlfuzz::check_error_line(s);
    ML_FUZZ_CHECK(s == ML_E_FORMAT, ml_last_error());
    return 0;
  }
  const int vocab = tok.vocab();
  ML_FUZZ_CHECK(model_vocab == 0 || vocab == model_vocab, "vocab");
  ML_FUZZ_CHECK(tok.n_tokens() >= 1 && tok.n_tokens() <= vocab, "n_tokens");
  if (tok.kind() == ml::Tokenizer::kByteLevel) {
    const ml::BpeTokenizer &b = tok.bpe();
    ml_text_stream stream{};
    for (int id = 0; id < vocab; ++id) {
      const char *piece = tok.decode(0, id);
      ML_FUZZ_CHECK(piece != nullptr, "decode of an id in the vocab");
      size_t len = 0;
      const char *raw = b.decode(id, &len);
      ML_FUZZ_CHECK(piece == raw, "decode is the token's bytes");
      mlfuzz::touch(raw, len + 1);
      ML_FUZZ_CHECK(raw[len] == '\0', "token bytes are NUL-terminated");
      if (id >= b.n_tokens() || b.kind(id) == ml::BpeTokenizer::kAbsent) ML_FUZZ_CHECK(len == 0, "empty token");
      const size_t plen = std::strlen(piece);
      std::vector<char> out(plen + 4);
      ML_FUZZ_CHECK(ml_text_stream_feed(&stream, piece, out.data()) <= plen + 4, "text stream output size");
    }
    ML_FUZZ_CHECK(tok.decode(0, -1) == nullptr && tok.decode(0, vocab) == nullptr, "decode out of range");
    for (int id : b.stop_ids()) ML_FUZZ_CHECK(id >= 0 && id < b.n_tokens(), "stop id");
    const mlfuzz::ByteLevelOracle oracle(b);
    for (const char *p : kPrompts) encode_bpe(tok, oracle, p);
    encode_bpe(tok, oracle, "<|im_start|>user\nHi<|im_end|> it's  2024\r\n\t\xe4\xbd\xa0" "e\xcc\x81");
    // Every token (and two of them joined) as a text of its own: special tokens, merges' results.
    for (int id = 0; id < b.n_tokens() && id < 600; ++id) {
      const std::string t = oracle.bytes(id);
      if (t.find('\0') == std::string::npos) {
        encode_bpe(tok, oracle, t);
        if (id + 1 < b.n_tokens()) encode_bpe(tok, oracle, t + oracle.bytes(id + 1).c_str());
      }
    }
    return 0;
  }

  // Decode every id after BOS and after another token, and stream the pieces as ml_run does,
  // into an exactly-sized buffer.
  ml_text_stream stream{};
  for (int id = 0; id < vocab; ++id) {
    for (int prev : {1, id > 0 ? id - 1 : 0}) {
      const char *piece = tok.decode(prev, id);
      ML_FUZZ_CHECK(piece != nullptr, "decode of an id in the vocab");
      const size_t len = std::strlen(piece);
      std::vector<char> out(len + 4);
      const size_t n = ml_text_stream_feed(&stream, piece, out.data());
      ML_FUZZ_CHECK(n <= len + 4, "text stream output size");
      ML_FUZZ_CHECK(stream.n_pending >= 0 && stream.n_pending < 4 && stream.need >= 0 && stream.need <= 3,
                    "text stream state");
    }
  }
  ML_FUZZ_CHECK(tok.decode(0, -1) == nullptr && tok.decode(0, vocab) == nullptr, "decode out of range");

  const mlfuzz::EncodeOracle oracle(tok);
  for (const char *p : kPrompts) encode_one(tok, oracle, p, vocab);
  // Every piece that is valid UTF-8 (and has no embedded NUL) as a prompt of its own.
  for (int id = 0; id < vocab && id < 64; ++id) {
    const char *piece = tok.piece(id);
    if (ml::unicode::valid_utf8(piece, std::strlen(piece))) encode_one(tok, oracle, piece, vocab);
  }
  return 0;
}
