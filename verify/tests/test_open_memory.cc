// ml_open_memory (runtime/ml.h): a model file already in memory, as the browser's loader
// (wasm/loader.js) streams it into wasm memory. A .mlb is used in place (one copy of the weights):
// its logits equal ml_open's of the same file bit for bit, and a weight byte changed in the caller's
// buffer after opening changes them (so nothing was copied). A GGUF is converted at open: the buffer
// can be wiped afterwards and the logits still equal ml_open's. Misaligned, NULL and truncated
// buffers are refused with one line naming what is wrong.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/ml.h"
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
