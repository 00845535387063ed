// ml_open_memory (runtime/ml.h): a model file already in memory, as the browser's loader
// (wasm/loader.js) streams it into wasm memory. A .mlb is used in place (one copy of the weights):
// its logits equal ml_open's of the same file bit for bit, and a weight byte changed in the caller's
// buffer after opening changes them (so nothing was copied). A GGUF is converted at open: the buffer
// can be wiped afterwards and the logits still equal ml_open's. Misaligned, NULL and truncated
// buffers are refused with one line naming what is wrong.
//
// A GGUF streamed in (ml::GgufStream, the browser loader's path: the file never whole in memory),
// fed in chunks of every size from 1 byte to several units: the converted weights are load_gguf's
// byte for byte, with the same views, config, tokenizer and logits, on five architectures' files
// (llama with its classifier shared, stored twice and apart, K-quants, qwen2's biases and permuted
// q/k, qwen3's norms, llama3's rope_freqs); a header cut short asks for more; a file
// that ends early or runs long is refused with one line.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <random>

#include "runtime/gguf.h"
#include "runtime/ml.h"
#include "runtime/model.h"
#include "verify/tests/common.h"

namespace {

struct Aligned {  // a 64-byte-aligned copy of a file, as wasm/loader.js allocates it
  uint8_t *p = nullptr;
  size_t n = 0;
  explicit Aligned(const std::string &bytes) : n(bytes.size()) {
    p = static_cast<uint8_t *>(std::aligned_alloc(64, (n + 63) / 64 * 64));
    std::memcpy(p, bytes.data(), n);
  }
  ~Aligned() { std::free(p); }
};

// The logits of tokens 1, 2, 3 at positions 0, 1, 2, concatenated.
std::vector<float> logits_of(ml_ctx *ctx) {
  ml_model_info info;
  REQUIRE(ml_get_info(ctx, &info) == ML_OK);
  std::vector<float> all;
  for (int pos = 0; pos < 3; ++pos) {
    const float *l = nullptr;
    REQUIRE(ml_eval(ctx, pos + 1, pos, &l) == ML_OK);
    all.insert(all.end(), l, l + info.vocab);
  }
  return all;
}

std::vector<float> logits_from_path(const std::string &path) {
  ml_ctx *ctx = nullptr;
  REQUIRE(ml_open(&ctx, path.c_str(), nullptr, nullptr) == ML_OK);
  std::vector<float> l = logits_of(ctx);
  ml_close(ctx);
  return l;
}

bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("ml_open_memory: a .mlb is used in place, bit-identical to ml_open", "[open_memory]") {
  const std::string path = test::models("random_gqa_q8_0.mlb");
  const std::string bytes = test::read_file(path);
  REQUIRE(bytes.size() > 4096);
  const std::vector<float> want = logits_from_path(path);
  Aligned buf(bytes);
  ml_ctx *ctx = nullptr;
  REQUIRE(ml_open_memory(&ctx, buf.p, buf.n, "random_gqa_q8_0.mlb", nullptr, nullptr) == ML_OK);
  ml_model_info info;
  REQUIRE(ml_get_info(ctx, &info) == ML_OK);
  CHECK(info.file_bytes == bytes.size());
  CHECK(std::string(info.format) == "mlb");
  CHECK(same_bits(logits_of(ctx), want));
  // The last quarter of the file is weights (the classifier / last layers): scribbling over it
  // changes the logits, so the context reads the caller's buffer, not a copy.
  std::memset(buf.p + buf.n * 3 / 4, 0x55, buf.n / 8);
  CHECK_FALSE(same_bits(logits_of(ctx), want));
  ml_close(ctx);
}

TEST_CASE("ml_open_memory: a GGUF is converted at open and its buffer no longer read", "[open_memory]") {
  const std::string path = test::shared("models/stories260K/stories260K.gguf");
  const std::string bytes = test::read_file(path);
  REQUIRE(bytes.size() > 4096);
  const std::vector<float> want = logits_from_path(path);
  Aligned buf(bytes);
  ml_ctx *ctx = nullptr;
  REQUIRE(ml_open_memory(&ctx, buf.p, buf.n, "stories260K.gguf", nullptr, nullptr) == ML_OK);
  ml_model_info info;
  REQUIRE(ml_get_info(ctx, &info) == ML_OK);
  CHECK(std::string(info.format) == "gguf");
  ml_tokenizer_info t;
  CHECK(ml_get_tokenizer_info(ctx, &t) == ML_OK);  // its own tokenizer, from the buffer's metadata
  std::memset(buf.p, 0, buf.n);
  CHECK(same_bits(logits_of(ctx), want));
  ml_close(ctx);
}

TEST_CASE("ml_open_memory refuses bad buffers with one line", "[open_memory]") {
  const std::string bytes = test::read_file(test::models("random_gqa_q8_0.mlb"));
  Aligned buf(bytes + std::string(64, '\0'));
  ml_ctx *ctx = nullptr;
  auto refused = [&](ml_status got, ml_status want, const char *needle) {
    INFO(ml_status_name(got) << ": " << ml_last_error());
    CHECK(got == want);
    CHECK(ctx == nullptr);
    const std::string msg = ml_last_error();
    CHECK(msg.find(needle) != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
  };
  refused(ml_open_memory(&ctx, buf.p + 8, bytes.size(), "m.mlb", nullptr, nullptr), ML_E_ARG, "64-byte aligned");
  refused(ml_open_memory(&ctx, nullptr, 100, "m.mlb", nullptr, nullptr), ML_E_ARG, "data is NULL");
  refused(ml_open_memory(&ctx, buf.p, bytes.size() / 2, "half.mlb", nullptr, nullptr), ML_E_FORMAT, "past the end");
  refused(ml_open_memory(&ctx, buf.p, 100, "short.mlb", nullptr, nullptr), ML_E_FORMAT, "256-byte");
  refused(ml_open_memory(&ctx, buf.p, bytes.size() + 64, "long.mlb", nullptr, nullptr), ML_E_FORMAT, "trailing bytes");
  CHECK(ml_open_memory(nullptr, buf.p, bytes.size(), "m.mlb", nullptr, nullptr) == ML_E_ARG);
}

namespace {

// Streams bytes into s in chunks of random sizes (1 byte to 3 x 64 KiB, small ones often).
ml_status stream_in(ml::GgufStream *s, const std::string &bytes, uint32_t seed, uint64_t upto) {
  std::mt19937 rng(seed);
  const uint8_t *p = reinterpret_cast<const uint8_t *>(bytes.data());
  for (uint64_t at = 0; at < upto;) {
    const uint32_t r = rng() % 4;
    uint64_t n = r == 0 ? 1 + rng() % 7 : r == 1 ? 1 + rng() % 600 : 1 + rng() % (3u << 16);
    n = std::min(n, upto - at);
    const std::vector<uint8_t> chunk(p + at, p + at + n);  // a buffer of its own, as the loader's
    if (const ml_status st = s->feed(chunk.data(), n)) return st;
    at += n;
  }
  return ML_OK;
}

// The header: begin() with the first bytes, doubling as the loader does until it is whole.
void begin_stream(ml::GgufStream *s, const std::string &bytes, const char *name) {
  const uint8_t *p = reinterpret_cast<const uint8_t *>(bytes.data());
  bool more = true;
  ml_status st = ML_OK;
  int asked = 0;
  for (uint64_t n = 16; more; n = std::min<uint64_t>(n * 2, bytes.size())) {
    st = s->begin(p, n, bytes.size(), name, &more);
    ++asked;
    if (more) CHECK(st == ML_E_FORMAT);
  }
  INFO(ml_last_error());
  REQUIRE(st == ML_OK);
  CHECK(asked > 1);  // 16 bytes never hold a header
}

uint64_t offset_in(const ml::Model &m, const void *p) { return uint64_t(static_cast<const uint8_t *>(p) - m.owned.p); }

}  // namespace

TEST_CASE("GGUF streamed in chunks: load_gguf's weights byte for byte, its views, config and logits", "[open_memory]") {
  const std::string files[] = {test::shared("models/stories260K/stories260K.gguf"), test::models("kq_mix.gguf"),
                               test::models("kq_q4_1.gguf"), test::models("stream_qwen2.gguf"),
                               test::models("stream_qwen3.gguf"),
                               test::models("stream_llama3.gguf")};
  uint32_t seed = 1;
  for (const std::string &path : files) {
    INFO(path);
    const std::string bytes = test::read_file(path);
    ml::Model want;
    REQUIRE(ml::load_model_from_memory(&want, reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(), "whole") == ML_OK);
    ml::GgufStream s;
    begin_stream(&s, bytes, "streamed");
    CHECK(s.weight_bytes() <= want.owned.n);
    REQUIRE(stream_in(&s, bytes, seed++, bytes.size()) == ML_OK);
    ml::Model got;
    INFO(ml_last_error());
    REQUIRE(s.finish(&got) == ML_OK);
    if (got.classifier.p) {  // a classifier of the embedding's shape that differs: load_gguf has it last
      const uint64_t at = offset_in(want, want.wcls.q);
      REQUIRE(at + got.classifier.n == want.owned.n);
      CHECK(std::memcmp(got.classifier.p, want.owned.p + at, size_t(got.classifier.n)) == 0);
      CHECK(got.wcls.q == got.classifier.p);
      REQUIRE(got.owned.n <= at);
    } else {
      REQUIRE(got.owned.n == want.owned.n);
      CHECK(offset_in(got, got.wcls.q) == offset_in(want, want.wcls.q));
    }
    CHECK(std::memcmp(got.owned.p, want.owned.p, size_t(got.owned.n)) == 0);
    CHECK(got.file.data() == got.owned.p);
    const ml::Config &a = got.cfg, &b = want.cfg;
    CHECK((a.dim == b.dim && a.n_layers == b.n_layers && a.vocab == b.vocab && a.n_tokens == b.n_tokens && a.arch == b.arch &&
           a.head_size == b.head_size && a.wtype == b.wtype && a.layout == b.layout && a.qk_norm == b.qk_norm));
    CHECK(a.shared_classifier == b.shared_classifier);
    CHECK((a.rope_scaling == b.rope_scaling && a.rope_factor == b.rope_factor && a.rope_original_max_seq == b.rope_original_max_seq));
    CHECK(got.tokenizer_image == want.tokenizer_image);
    CHECK(got.gguf);
    CHECK(got.source_bytes == bytes.size());
    CHECK(offset_in(got, got.tok_emb.q) == offset_in(want, want.tok_emb.q));
    CHECK(offset_in(got, got.final_norm) == offset_in(want, want.final_norm));
    CHECK(offset_in(got, got.layers.back().w2.q) == offset_in(want, want.layers.back().w2.q));
    CHECK(got.load_note.find("as the file streamed in") != std::string::npos);
    if (path.find("llama3") != std::string::npos) {
      CHECK(a.rope_scaling == 1);        // rope_freqs.weight came in the stream
      CHECK(a.shared_classifier);        // output.weight: the embedding's bytes, found equal
    }
    if (path.find("kq_") != std::string::npos) CHECK_FALSE(a.shared_classifier);
    CHECK((got.classifier.p != nullptr) == (path.find("kq_q4_1") != std::string::npos));
  }
  // A context on a streamed model: ml_open_memory's logits bit for bit.
  const std::string path = test::models("stream_qwen2.gguf"), bytes = test::read_file(path);
  Aligned buf(bytes);
  ml_ctx *ctx = nullptr;
  REQUIRE(ml_open_memory(&ctx, buf.p, buf.n, "whole", nullptr, nullptr) == ML_OK);
  const std::vector<float> want = logits_of(ctx);
  ml_close(ctx);
  ml::GgufStream s;
  begin_stream(&s, bytes, "stream_qwen2.gguf");
  REQUIRE(stream_in(&s, bytes, 99, bytes.size()) == ML_OK);
  INFO(ml_last_error());
  REQUIRE(ml::ml_open_streamed(&ctx, &s, "stream_qwen2.gguf", nullptr, nullptr) == ML_OK);
  ml_model_info info;
  REQUIRE(ml_get_info(ctx, &info) == ML_OK);
  CHECK(std::string(info.format) == "gguf");
  CHECK(info.file_bytes == bytes.size());
  CHECK(same_bits(logits_of(ctx), want));
  ml_close(ctx);
}

TEST_CASE("GGUF streamed in: a short, long or broken file is refused with one line", "[open_memory]") {
  const std::string bytes = test::read_file(test::shared("models/stories260K/stories260K.gguf"));
  const auto one_line = [](const char *needle) {
    const std::string msg = ml_last_error();
    INFO(msg);
    CHECK(msg.find(needle) != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
  };
  ml::GgufStream s;
  bool more = false;
  CHECK(s.begin(reinterpret_cast<const uint8_t *>(bytes.data()), 100, bytes.size(), "cut.gguf", &more) == ML_E_FORMAT);
  CHECK(more);
  one_line("past the first 100 bytes given");
  begin_stream(&s, bytes, "short.gguf");
  REQUIRE(stream_in(&s, bytes, 5, bytes.size() - 1) == ML_OK);
  ml::Model m;
  CHECK(s.finish(&m) == ML_E_FORMAT);
  one_line("truncated GGUF");
  begin_stream(&s, bytes, "long.gguf");
  REQUIRE(stream_in(&s, bytes, 6, bytes.size()) == ML_OK);
  const uint8_t extra = 0;
  CHECK(s.feed(&extra, 1) == ML_E_FORMAT);
  one_line("more bytes than");
  std::string bad = bytes;
  bad[4] = 9;  // version 9
  CHECK(s.begin(reinterpret_cast<const uint8_t *>(bad.data()), bad.size(), bad.size(), "v9.gguf", &more) == ML_E_FORMAT);
  CHECK_FALSE(more);
  one_line("versions 2 and 3");
  CHECK(s.feed(&extra, 1) == ML_E_ARG);  // no stream after a failed begin
}

