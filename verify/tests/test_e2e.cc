// End to end: the build's forward pass against the scalar reference forward, teacher-forced
// agreement with llama2.c's golden tokens, and thread-count independence (verify/e2e_checks.cc).
#include <cstdio>

#include "runtime/ml.h"
#include "verify/tests/common.h"

TEST_CASE("ISA forward vs scalar forward: random GQA model, dim 256", "[e2e-random]") {
  test::Rows r;
  for (const char *w : {"f32", "q8_0", "q4_0"})
    ml_verify_e2e(test::models(std::string("random_gqa_") + w + ".mlb").c_str(), 16, 64, &test::Rows::sink, &r, 1.0);
  test::expect_all_pass(r);
}

// .mlb version 2: a Qwen2-shaped model (q/k/v biases, n_tokens < vocab) and a Llama-3-shaped one
// (llama3 RoPE scaling), quantized in both layouts (verify/make_fixtures.py).
TEST_CASE("ISA forward vs scalar forward: random qwen2-tiny and llama3-tiny (.mlb v2)", "[e2e-random]") {
  test::Rows r;
  for (const char *m : {"qwen2_tiny", "llama3_tiny"})
    for (const char *w : {"f32", "q8_0", "q4_0", "q8_0_panel16", "q4_0_panel16"})
      ml_verify_e2e(test::models(std::string(m) + "_" + w + ".mlb").c_str(), 16, 48, &test::Rows::sink, &r, 1.0);
  test::expect_all_pass(r);
}

TEST_CASE("logits are bit-identical for 1..4 threads", "[e2e-random]") {
  test::Rows r;
  for (const char *m : {"random_gqa_f32", "random_gqa_q8_0", "random_gqa_q4_0", "random_odd_q4_0_panel16",
                        "qwen2_tiny_q8_0", "qwen2_tiny_q4_0_panel16", "llama3_tiny_q4_0", "llama3_tiny_q8_0_panel16"})
    ml_verify_threads(test::models(std::string(m) + ".mlb").c_str(), 12, 4, &test::Rows::sink, &r);
  test::expect_all_pass(r);
}

TEST_CASE("batched prefill gives the bits of one token at a time", "[e2e-random]") {
  test::Rows r;
  for (const char *m : {"random_gqa_f32", "random_gqa_q8_0", "random_gqa_q4_0_panel16", "random_odd_q8_0_panel16",
                        "qwen2_tiny_q8_0_panel16", "qwen2_tiny_q4_0", "llama3_tiny_q8_0", "llama3_tiny_q4_0_panel16"})
    for (int chunk : {64, 7})
      ml_verify_batch(test::models(std::string(m) + ".mlb").c_str(), 40, chunk, &test::Rows::sink, &r);
  test::expect_all_pass(r);
}

TEST_CASE("16-row panels (layout 1) give the row layout's bits", "[e2e-random]") {
  test::Rows r;
  for (const char *m : {"random_gqa_q8_0", "random_gqa_q4_0", "random_odd_q8_0", "random_odd_q4_0", "qwen2_tiny_q8_0",
                        "qwen2_tiny_q4_0", "llama3_tiny_q8_0", "llama3_tiny_q4_0"})
    ml_verify_same_logits(test::models(std::string(m) + ".mlb").c_str(), test::models(std::string(m) + "_panel16.mlb").c_str(),
                          24, &test::Rows::sink, &r);
  for (const char *m : {"random_gqa_q8_0_panel16", "random_odd_q4_0_panel16"})
    ml_verify_e2e(test::models(std::string(m) + ".mlb").c_str(), 16, 64, &test::Rows::sink, &r, 1.0);
  test::expect_all_pass(r);
}

TEST_CASE("ISA forward vs scalar forward: stories260K", "[e2e-stories]") {
  test::Rows r;
  for (const char *w : {"f32", "q8_0", "q4_0", "q8_0_panel16", "q4_0_panel16"})
    ml_verify_e2e(test::models(std::string("stories260K_") + w + ".mlb").c_str(), 16, 64, &test::Rows::sink, &r, 1.0);
  for (const char *w : {"q8_0", "q4_0"})
    ml_verify_same_logits(test::models(std::string("stories260K_") + w + ".mlb").c_str(),
                          test::models(std::string("stories260K_") + w + "_panel16.mlb").c_str(), 32, &test::Rows::sink, &r);
  test::expect_all_pass(r);
}

TEST_CASE("teacher-forced on llama2.c's golden tokens", "[e2e-stories]") {
  const std::vector<int> golden = test::read_ids(test::shared("golden/once_upon_a_time.tokens"));
  REQUIRE(golden.size() == 201);
  struct Want { const char *w; double min; };
  // F32 is the same model as llama2.c's: every greedy choice must agree. The quantized floors are
  // the (an independent float32 implementation measured 98.5 % and 85.5 %).
  for (const Want &x : {Want{"f32", 1.0}, Want{"q8_0", 0.95}, Want{"q4_0", 0.75}}) {
    for (int reference = 0; reference <= 1; ++reference) {
      const std::string path = test::models(std::string("stories260K_") + x.w + ".mlb");
      const double agree = ml_verify_teacher_forced(path.c_str(), golden.data(), 201, reference);
      std::printf("teacher-forced agreement %s (%s kernels): %.1f %% of 200 positions\n", x.w,
                  reference ? "scalar reference" : "build", agree * 100.0);
      INFO(x.w << (reference ? " reference" : " build") << ": " << agree << " (" << ml_last_error() << ")");
      CHECK(agree >= x.min);
    }
  }
}
