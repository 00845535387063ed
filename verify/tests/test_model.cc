// Every malformed-file class is rejected by ml_open with its named error (runtime/model.cc).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <sys/stat.h>

#include "runtime/ml.h"
#include "runtime/model.h"
#include "verify/tests/common.h"

namespace {

std::string write_variant(const std::string &name, const std::string &bytes) {
  const std::string path = test::models("malformed_" + name + ".mlb");
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
  return path;
}

void put_u32(std::string &b, size_t off, uint32_t v) { std::memcpy(&b[off], &v, 4); }
void put_f32(std::string &b, size_t off, float v) { std::memcpy(&b[off], &v, 4); }

// Opens `path` and expects `status` with `needle` in the message.
void expect_rejected(const std::string &path, ml_status status, const char *needle) {
  ml_ctx *ctx = nullptr;
  const ml_status s = ml_open(&ctx, path.c_str(), nullptr, nullptr);
  INFO(path << ": " << ml_status_name(s) << ": " << ml_last_error());
  CHECK(s == status);
  CHECK(ctx == nullptr);
  CHECK(std::string(ml_last_error()).find(needle) != std::string::npos);
  ml_close(ctx);
}

}  // namespace

TEST_CASE("a valid model opens", "[model]") {
  ml_ctx *ctx = nullptr;
  REQUIRE(ml_open(&ctx, test::models("tiny_q8_0.mlb").c_str(), nullptr, nullptr) == ML_OK);
  ml_model_info info;
  REQUIRE(ml_get_info(ctx, &info) == ML_OK);
  CHECK(info.dim == 64);
  CHECK(info.vocab == 64);
  CHECK(info.wtype == 8);
  CHECK(std::string(info.arch) == "llama");
  CHECK(info.n_tokens == 64);
  ml_close(ctx);
}

// The KV cache type sets the context's memory: random_gqa (2 layers, 2 kv heads of head_dim 32,
// context 128) holds 2 · 2 · 128 · 64 = 32768 K and V elements: 128 KiB as F32, 64 as F16, and as
// Q8_0 32 KiB of quants plus 4 KiB of block scales. The arenas differ by exactly that (every buffer
// is 64-byte aligned and these sizes are multiples of 64), so a type that also reserves another
// type's arrays shows. An unknown type is refused, naming the choices.
// ml_options.map_weights = 0: when a mapped file is copied into huge pages (runtime/model.h). The copy
// itself, bit for bit against the mapping, is verify/tests/test_cli.py's HugePages.
TEST_CASE("weights are copied into huge pages only where the system gives them and they fit", "[model]") {
  const uint64_t MiB = uint64_t(1) << 20;
  const char *madvise = "always [madvise] never\n", *always = "[always] madvise never\n", *never = "always madvise [never]\n";
  CHECK(ml::huge_pages_help(32 * MiB, madvise, 64 * MiB));
  CHECK(ml::huge_pages_help(32 * MiB, always, 64 * MiB));
  CHECK_FALSE(ml::huge_pages_help(32 * MiB, never, 64 * MiB));       // no huge pages: the copy gains nothing
  CHECK_FALSE(ml::huge_pages_help(32 * MiB, "", 64 * MiB));          // not Linux, or no such file
  CHECK_FALSE(ml::huge_pages_help(32 * MiB, nullptr, 64 * MiB));
  CHECK_FALSE(ml::huge_pages_help(32 * MiB - 1, madvise, 64 * MiB)); // under 16 huge pages: OwnedBytes asks for none
  CHECK_FALSE(ml::huge_pages_help(32 * MiB, madvise, 64 * MiB - 1)); // more than half the available memory
  CHECK(ml::huge_pages_help(4096 * MiB, madvise, 8192 * MiB));
}

TEST_CASE("the KV cache type sets the context's memory", "[model]") {
  uint64_t arena[3] = {0, 0, 0};
  for (int kv : {ML_KV_F32, ML_KV_F16, ML_KV_Q8_0}) {
    ml_options o;
    ml_options_init(&o);
    o.kv_type = kv;
    o.n_threads = 1;
    ml_ctx *ctx = nullptr;
    REQUIRE(ml_open(&ctx, test::models("random_gqa_q8_0.mlb").c_str(), nullptr, &o) == ML_OK);
    ml_model_info info;
    REQUIRE(ml_get_info(ctx, &info) == ML_OK);
    CHECK(info.kv_type == kv);
    arena[kv] = info.arena_bytes;
    ml_close(ctx);
  }
  const uint64_t elements = 2 * 2 * 128 * 64, q8 = elements + elements / 32 * 4;
  INFO("arena f32 " << arena[0] << ", f16 " << arena[1] << ", q8_0 " << arena[2]);
  CHECK(arena[0] - arena[1] == elements * 2 - 32 * 32 * 4);  // F16 adds one block of 32 rows as F32
  // Q8_0 adds per-thread scratch for the quantized query heads (under 1 KiB here)
  CHECK(arena[1] - arena[2] + 1024 >= elements * 2 - q8);
  CHECK(arena[1] - arena[2] <= elements * 2 - q8);
  ml_options o;
  ml_options_init(&o);
  o.kv_type = 3;
  ml_ctx *ctx = nullptr;
  CHECK(ml_open(&ctx, test::models("random_gqa_q8_0.mlb").c_str(), nullptr, &o) == ML_E_ARG);
  CHECK(std::string(ml_last_error()).find("ML_KV_Q8_0 (2)") != std::string::npos);
  int t = -1;
  CHECK(ml_kv_type_parse("q4_0", &t) == ML_E_ARG);
  CHECK(std::string(ml_last_error()).find("choose f32, f16 or q8_0") != std::string::npos);
  CHECK((ml_kv_type_parse("q8_0", &t) == ML_OK && t == ML_KV_Q8_0));
}

TEST_CASE("a version-2 header with llama3 RoPE scaling and n_tokens opens and says so", "[model]") {
  std::string b = test::read_file(test::models("tiny_q8_0.mlb"));
  put_u32(b, 4, 2);
  put_u32(b, 56, 1);  // qwen2 (descriptive: no biases stored)
  put_u32(b, 64, 1);
  put_f32(b, 68, 32.0f);
  put_f32(b, 72, 1.0f);
  put_f32(b, 76, 4.0f);
  put_u32(b, 80, 8192);
  put_u32(b, 84, 60);
  ml_ctx *ctx = nullptr;
  REQUIRE(ml_open(&ctx, write_variant("v2_ok", b).c_str(), nullptr, nullptr) == ML_OK);
  ml_model_info info;
  REQUIRE(ml_get_info(ctx, &info) == ML_OK);
  CHECK(std::string(info.arch) == "qwen2");
  CHECK(info.n_tokens == 60);
  CHECK(info.vocab == 64);
  ml_close(ctx);
}

TEST_CASE("a version-3 file (Qwen3: head_dim 24 != dim / heads, q/k norm) opens and says so", "[model]") {
  ml_ctx *ctx = nullptr;
  REQUIRE(ml_open(&ctx, test::models("qwen3_tiny_q8_0_panel16.mlb").c_str(), nullptr, nullptr) == ML_OK);
  ml_model_info info;
  REQUIRE(ml_get_info(ctx, &info) == ML_OK);
  CHECK(std::string(info.arch) == "qwen3");
  CHECK(info.dim == 64);
  CHECK(info.n_heads == 4);
  CHECK(info.head_dim == 24);
  ml_close(ctx);
  // A version-2 reader's file still reads: head_dim = dim / n_heads.
  REQUIRE(ml_open(&ctx, test::models("qwen2_tiny_q8_0.mlb").c_str(), nullptr, nullptr) == ML_OK);
  REQUIRE(ml_get_info(ctx, &info) == ML_OK);
  CHECK(info.head_dim == info.dim / info.n_heads);
  ml_close(ctx);
}

TEST_CASE("malformed .mlb files are rejected, naming the field", "[model]") {
  const std::string good = test::read_file(test::models("tiny_q8_0.mlb"));
  REQUIRE(good.size() > 4096);
  std::string b;

  SECTION("truncated inside the header") {
    expect_rejected(write_variant("short_header", good.substr(0, 100)), ML_E_FORMAT, "shorter than the 256-byte");
  }
  SECTION("truncated inside a tensor") {
    expect_rejected(write_variant("mid_tensor", good.substr(0, good.size() / 2)), ML_E_FORMAT, "past the end");
  }
  SECTION("last byte missing") {
    expect_rejected(write_variant("minus_one", good.substr(0, good.size() - 1)), ML_E_FORMAT, "past the end");
  }
  SECTION("trailing bytes") {
    expect_rejected(write_variant("trailing", good + std::string(64, '\0')), ML_E_FORMAT, "trailing bytes");
  }
  SECTION("bad magic") {
    b = good;
    b[0] = 'G';
    expect_rejected(write_variant("magic", b), ML_E_FORMAT, "bad magic");
  }
  SECTION("bad version") {
    b = good;
    put_u32(b, 4, 4);
    expect_rejected(write_variant("version", b), ML_E_FORMAT, "version = 4");
    put_u32(b, 4, 0);
    expect_rejected(write_variant("version0", b), ML_E_FORMAT, "version = 0");
  }
  SECTION("a version-2 field in a version-1 file") {
    b = good;
    put_u32(b, 56, 1);  // arch = qwen2
    expect_rejected(write_variant("v1_arch", b), ML_E_FORMAT, "reserved header byte 56");
    b = good;
    put_u32(b, 84, 10);  // n_tokens
    expect_rejected(write_variant("v1_n_tokens", b), ML_E_FORMAT, "reserved header byte 84");
  }
  SECTION("version-2 fields out of range") {
    std::string v2 = good;
    put_u32(v2, 4, 2);
    b = v2;
    put_u32(b, 56, 3);
    expect_rejected(write_variant("v2_arch", b), ML_E_FORMAT, "arch = 3 is not an architecture");
    b = v2;
    put_u32(b, 56, 2);
    expect_rejected(write_variant("v2_arch_qwen3", b), ML_E_FORMAT, "arch = 2 (qwen3) needs .mlb version 3");
    b = v2;
    put_u32(b, 60, 2);
    expect_rejected(write_variant("v2_bias", b), ML_E_FORMAT, "qkv_bias = 2");
    b = v2;
    put_u32(b, 60, 1);  // biases announced but not stored: the tensors after them run past the end
    expect_rejected(write_variant("v2_bias_absent", b), ML_E_FORMAT, "past the end");
    b = v2;
    put_u32(b, 64, 2);
    expect_rejected(write_variant("v2_rope", b), ML_E_FORMAT, "rope_scaling = 2");
    b = v2;
    put_f32(b, 76, 4.0f);
    expect_rejected(write_variant("v2_rope_none_params", b), ML_E_FORMAT, "rope_high_freq_factor is not zero");
    std::string l3 = v2;  // a valid llama3 scaling, then one broken parameter at a time
    put_u32(l3, 64, 1);
    put_f32(l3, 68, 32.0f);
    put_f32(l3, 72, 1.0f);
    put_f32(l3, 76, 4.0f);
    put_u32(l3, 80, 8192);
    b = l3;
    put_f32(b, 68, std::nanf(""));
    expect_rejected(write_variant("v2_factor_nan", b), ML_E_FORMAT, "rope_factor");
    b = l3;
    put_f32(b, 72, 0.0f);
    expect_rejected(write_variant("v2_low_zero", b), ML_E_FORMAT, "rope_low_freq_factor = 0");
    b = l3;
    put_f32(b, 72, 4.0f);
    expect_rejected(write_variant("v2_low_high", b), ML_E_FORMAT, "must be < rope_high_freq_factor");
    b = l3;
    put_u32(b, 80, 0);
    expect_rejected(write_variant("v2_orig_zero", b), ML_E_FORMAT, "rope_original_max_seq = 0");
    b = v2;
    put_u32(b, 84, 65);  // vocab is 64
    expect_rejected(write_variant("v2_n_tokens", b), ML_E_FORMAT, "n_tokens = 65 is larger than vocab = 64");
    b = v2;
    b[88] = 1;
    expect_rejected(write_variant("v2_reserved", b), ML_E_FORMAT, "reserved header byte 88");
  }
  SECTION("version-3 fields out of range") {
    std::string v3 = good;  // dim 64, 4 heads (head_dim 16), 2 kv heads, Q8_0
    put_u32(v3, 4, 3);
    b = v3;
    put_u32(b, 88, 1);
    expect_rejected(write_variant("v3_head1", b), ML_E_FORMAT, "head_size = 1 is out of range");
    b = v3;
    put_u32(b, 88, 6);
    put_u32(b, 92, 2);
    expect_rejected(write_variant("v3_qk2", b), ML_E_FORMAT, "qk_norm = 2 must be 0 or 1");
    b = v3;
    put_u32(b, 88, 18);  // q_dim 72 would be fine for F32, but wo's K must be a multiple of 32
    expect_rejected(write_variant("v3_head18", b), ML_E_SHAPE, "tensor wo: K = n_heads · head_size = 72");
    b = v3;
    put_u32(b, 88, 25);
    expect_rejected(write_variant("v3_head_odd", b), ML_E_SHAPE, "head_size = 25 must be even");
    b = v3;
    put_u32(b, 88, 8);  // a head_size that the tensors do not have: wq shrinks, the file has bytes left
    expect_rejected(write_variant("v3_head8", b), ML_E_FORMAT, "trailing bytes");
    b = v3;
    put_u32(b, 92, 1);  // q/k norm announced but not stored
    expect_rejected(write_variant("v3_qk_absent", b), ML_E_FORMAT, "past the end");
    b = v3;
    b[96] = 1;
    expect_rejected(write_variant("v3_reserved", b), ML_E_FORMAT, "reserved header byte 96");
  }
  SECTION("K % 32 != 0 (dim 40, quantized)") {
    b = good;
    put_u32(b, 8, 40);
    expect_rejected(write_variant("dim40", b), ML_E_SHAPE, "K = dim = 40 is not a multiple of 32");
  }
  SECTION("K % 32 != 0 (hidden_dim 80, quantized)") {
    b = good;
    put_u32(b, 24, 80);
    expect_rejected(write_variant("hidden80", b), ML_E_SHAPE, "tensor w2: K = hidden_dim = 80");
  }
  SECTION("n_heads % n_kv_heads != 0") {
    b = good;
    put_u32(b, 20, 3);
    expect_rejected(write_variant("kv3", b), ML_E_SHAPE, "n_heads = 4 is not a multiple of n_kv_heads = 3");
  }
  SECTION("an array past the end of the file (vocab too large)") {
    b = good;
    put_u32(b, 28, 100000);
    expect_rejected(write_variant("vocab", b), ML_E_FORMAT, "tensor tok_emb: q array");
  }
  SECTION("zero dimension") {
    b = good;
    put_u32(b, 12, 0);
    expect_rejected(write_variant("layers0", b), ML_E_FORMAT, "n_layers = 0 is out of range");
  }
  SECTION("unknown weight type") {
    b = good;
    put_u32(b, 44, 5);
    expect_rejected(write_variant("wtype", b), ML_E_FORMAT, "wtype = 5");
  }
  SECTION("unknown layout") {
    b = good;
    put_u32(b, 52, 3);
    expect_rejected(write_variant("layout", b), ML_E_FORMAT, "layout = 3");
  }
  SECTION("16-row panels with binary16 scales (layout 2) with F32 weights") {
    b = good;
    put_u32(b, 52, 2);
    put_u32(b, 44, 0);
    expect_rejected(write_variant("layout2_f32", b), ML_E_FORMAT, "layout = 2 (16-row panels) needs a quantized wtype");
  }
  SECTION("16-row panels (layout 1) with F32 weights") {
    b = good;
    put_u32(b, 52, 1);
    put_u32(b, 44, 0);
    expect_rejected(write_variant("layout_f32", b), ML_E_FORMAT, "needs a quantized wtype");
  }
  SECTION("reserved header byte set") {
    b = good;
    b[200] = 1;
    expect_rejected(write_variant("reserved", b), ML_E_FORMAT, "reserved header byte 200");
  }
  SECTION("NaN rope_theta") {
    b = good;
    put_f32(b, 36, std::nanf(""));
    expect_rejected(write_variant("theta", b), ML_E_FORMAT, "rope_theta");
  }
  SECTION("empty file") { expect_rejected(write_variant("empty", ""), ML_E_FORMAT, "is empty"); }
  SECTION("missing file") {
    expect_rejected(test::models("does_not_exist.mlb"), ML_E_IO, "cannot open model file");
  }
  SECTION("a directory as the model") {
    const std::string dir = test::models("a_directory.mlb");
    std::filesystem::create_directory(dir);
    expect_rejected(dir, ML_E_IO, "is a directory");
  }
}

TEST_CASE("ml_eval rejects bad tokens and positions", "[model]") {
  ml_ctx *ctx = nullptr;
  REQUIRE(ml_open(&ctx, test::models("tiny_q8_0.mlb").c_str(), nullptr, nullptr) == ML_OK);
  const float *logits = nullptr;
  CHECK(ml_eval(ctx, 64, 0, &logits) == ML_E_ARG);   // vocab is 64
  CHECK(ml_eval(ctx, -1, 0, &logits) == ML_E_ARG);
  CHECK(ml_eval(ctx, 1, 1, &logits) == ML_E_ARG);    // skips position 0
  CHECK(ml_eval(ctx, 1, 16, &logits) == ML_E_ARG);   // context is 16
  CHECK(ml_eval(ctx, 1, 0, &logits) == ML_OK);
  CHECK(ml_eval(ctx, 2, 1, &logits) == ML_OK);
  CHECK(ml_eval(ctx, 2, 0, &logits) == ML_OK);       // rewinding is allowed
  CHECK(ml_sampler_set(ctx, -1.0f, 0.9f, 1) == ML_E_ARG);
  CHECK(ml_sampler_set(ctx, std::nanf(""), 0.9f, 1) == ML_E_ARG);
  CHECK(ml_sampler_set(ctx, 1.0f, 0.0f, 1) == ML_E_ARG);
  CHECK(ml_sampler_set(ctx, 1.0f, 1.5f, 1) == ML_E_ARG);
  CHECK(ml_sampler_set(ctx, 1.0f, 1.0f, 1) == ML_OK);
  ml_close(ctx);
}
