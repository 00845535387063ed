// Fuzz target: the llama2.c tokenizer.bin loader (runtime/tokenizer.cc Tokenizer::load), then
// decode, the text stream (ml_text_stream_feed) and encode with the loaded, hostile vocabulary.
//
// Input: u16 little-endian vocab (the model's vocab, which tokenizer.bin does not store), then
// the tokenizer.bin bytes (fuzz/corpus/tokenizer/, written by fuzz/gen_corpus.py).
// Properties: no crash, no read outside the input or the buffers (exactly-sized heap copies);
// rejection = ML_E_FORMAT with one line; after a successful load every id decodes to a string,
// ids outside the vocab decode to NULL, the text stream never writes past strlen(piece) + 4,
// and encode either fails cleanly or returns ids inside the vocab, at most strlen + 2 of them,
// the same as llama2.c's encode written out plainly (fuzz/encode_oracle.h) with this vocabulary
// (duplicate pieces, NaN and equal scores, empty pieces, no byte tokens ...).
#include <string>
#include <vector>

#include "fuzz/encode_oracle.h"
#include "fuzz/fuzz_common.h"
#include "runtime/error.h"
#include "runtime/tokenizer.h"

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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlfuzz::g_accepted = -1;
  if (size < 2) return 0;
  const int vocab = data[0] | data[1] << 8;
  if (vocab == 0) return 0;  // a model's vocab is >= 1
  mlfuzz::AlignedCopy buf(data + 2, size - 2);
  ml::Tokenizer tok;
  ml::clear_error();
  const ml_status s = tok.load(buf.data(), buf.size(), vocab, "fuzz.bin");
  mlfuzz::g_accepted = s == ML_OK;
  if (s != ML_OK) {
    mlfuzz::check_error_line(s);
    ML_FUZZ_CHECK(s == ML_E_FORMAT, ml_last_error());
    return 0;
  }
  ML_FUZZ_CHECK(tok.vocab() == vocab, "vocab");

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
    if (ml::valid_utf8(piece, nullptr)) encode_one(tok, oracle, piece, vocab);
  }
  return 0;
}
