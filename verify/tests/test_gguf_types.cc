// GGUF's other block types taken exactly (runtime/gguf_model.cc; kernels/kernels.h: ml_qtensor's
// m and d2), on the fixtures ML_MODELS/kq_<type>.gguf and the Q4_K_M-like kq_mix.gguf
// (verify/make_fixtures.py random; tools/ggml_quants.py's encoder):
//  - every weight the runtime holds (ml_dequantize_row of the converted tensor) is, bit for bit,
//    ggml's dequantized value of the stored block (kernels/ggml_blocks.h, checked against
//    llama.cpp's dequantize_row_* and against tools/ggml_quants.py): no requantization;
//  - this build's kernels give the scalar reference's logits bit for bit, one token at a time
//    (matvec) and in a batch (matmul), and with every thread count the build has.
// Run as the ctest entry gguf.types on every preset.
#include <cstring>
#include <string>
#include <vector>

#include "kernels/ggml_blocks.h"
#include "runtime/file_map.h"
#include "runtime/gguf.h"
#include "runtime/ml.h"
#include "runtime/model.h"
#include "verify/tests/common.h"

namespace {

const char *const kFiles[] = {"kq_q4_1", "kq_q5_0", "kq_q5_1", "kq_q3_k", "kq_q4_k", "kq_q5_k", "kq_q6_k", "kq_mix"};

// Every row of `w` against ggml's dequantization of the GGUF tensor `name`.
void check_tensor(const ml::GgufFile &g, const std::string &name, const ml_qtensor &w, int *checked) {
  const ml::GgufFile::Tensor *t = g.tensor(name);
  REQUIRE(t != nullptr);
  INFO("tensor " << name << " (" << ml::ggml_type(t->type)->name << ")");
  REQUIRE(uint64_t(w.cols) == t->ne[0]);
  REQUIRE(uint64_t(w.rows) == t->rows());
  const int64_t row_bytes = ml::ggml_row_bytes(t->type, w.cols);
  REQUIRE(row_bytes > 0);
  std::vector<float> got(size_t(w.cols)), want(size_t(w.cols));
  int bad = 0;
  for (int r = 0; r < w.rows; ++r) {
    ml_dequantize_row(got.data(), &w, r);
    ml::ggml_dequantize_row(t->type, g.tensor_data(*t) + size_t(r) * size_t(row_bytes), want.data(), w.cols);
    if (std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) != 0 && bad++ == 0) {
      for (int k = 0; k < w.cols; ++k)
        if (std::memcmp(&got[size_t(k)], &want[size_t(k)], 4) != 0) {
          INFO("row " << r << ", column " << k << ": " << got[size_t(k)] << " != ggml's " << want[size_t(k)]);
          CHECK(false);
          break;
        }
    }
  }
  CHECK(bad == 0);
  *checked += 1;
}

std::vector<float> logits(const std::string &path, int reference, int threads, bool batch) {
  ml_options o;
  ml_options_init(&o);
  o.reference = reference;
  o.n_threads = threads;
  ml_ctx *ctx = nullptr;
  REQUIRE(ml_open(&ctx, path.c_str(), nullptr, &o) == ML_OK);
  ml_model_info info;
  REQUIRE(ml_get_info(ctx, &info) == ML_OK);
  const int tokens[] = {1, 5, 17, 33, 2, 70, 79, 0, 41, 9};
  const int n = int(sizeof tokens / sizeof tokens[0]);
  std::vector<float> out;
  const float *l = nullptr;
  if (batch) {
    REQUIRE(ml_eval_batch(ctx, tokens, n, 0, 1, &l) == ML_OK);
    out.assign(l, l + size_t(n) * size_t(info.vocab));
  } else {
    for (int i = 0; i < n; ++i) {
      REQUIRE(ml_eval(ctx, tokens[i], i, &l) == ML_OK);
      out.insert(out.end(), l, l + info.vocab);
    }
  }
  ml_close(ctx);
  return out;
}

}  // namespace

TEST_CASE("GGUF block types: the weights are ggml's dequantized values bit for bit", "[gguf_types]") {
  int checked = 0;
  for (const char *f : kFiles) {
    const std::string path = test::models(std::string(f) + ".gguf");
    INFO(path);
    ml::FileMap file;
    REQUIRE(file.open(path.c_str(), "model") == ML_OK);
    ml::GgufFile g;
    REQUIRE(g.parse(file.data(), file.size(), path.c_str()) == ML_OK);
    ml::Model m;
    REQUIRE(ml::load_model(&m, path.c_str()) == ML_OK);
    check_tensor(g, "token_embd.weight", m.tok_emb, &checked);
    check_tensor(g, "output.weight", m.wcls, &checked);
    for (size_t l = 0; l < m.layers.size(); ++l) {
      const std::string b = "blk." + std::to_string(l) + ".";
      const ml::LayerWeights &w = m.layers[l];
      check_tensor(g, b + "attn_q.weight", w.wq, &checked);
      check_tensor(g, b + "attn_k.weight", w.wk, &checked);
      check_tensor(g, b + "attn_v.weight", w.wv, &checked);
      check_tensor(g, b + "attn_output.weight", w.wo, &checked);
      check_tensor(g, b + "ffn_gate.weight", w.w1, &checked);
      check_tensor(g, b + "ffn_down.weight", w.w2, &checked);
      check_tensor(g, b + "ffn_up.weight", w.w3, &checked);
    }
  }
  CHECK(checked == 9 * int(sizeof kFiles / sizeof kFiles[0]));
}

TEST_CASE("GGUF block types: the build's kernels give the scalar reference's logits bit for bit", "[gguf_types]") {
  for (const char *f : kFiles) {
    const std::string path = test::models(std::string(f) + ".gguf");
    INFO(path);
    const std::vector<float> ref = logits(path, 1, 1, false);
    REQUIRE(!ref.empty());
    for (const bool batch : {false, true})
      for (const int threads : {1, 0}) {  // 0: one per CPU (a build without threads runs 1)
        INFO((batch ? "batch" : "token by token") << ", threads " << threads);
        const std::vector<float> got = logits(path, 0, threads, batch);
        REQUIRE(got.size() == ref.size());
        CHECK(std::memcmp(got.data(), ref.data(), ref.size() * sizeof(float)) == 0);
      }
  }
}
