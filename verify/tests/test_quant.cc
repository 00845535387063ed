// Quantization properties and converter/C++ quantizer parity (verify/quant_checks.cc).
#include "verify/tests/common.h"

TEST_CASE("quantize -> dequantize error, zero blocks, clamp, exact ties, nibble order", "[quant]") {
  test::Rows r;
  ml_verify_quant(&test::Rows::sink, &r, 1.0);
  test::expect_all_pass(r);
}

TEST_CASE("converter bytes equal the C++ quantizer's: stories260K", "[converter]") {
  test::Rows r;
  for (const char *w : {"q8_0", "q4_0"})
    ml_verify_converter_parity(test::models("stories260K_f32.mlb").c_str(),
                               test::models(std::string("stories260K_") + w + ".mlb").c_str(), &test::Rows::sink, &r);
  test::expect_all_pass(r);
}

TEST_CASE("converter bytes equal the C++ quantizer's: random GQA model (gen_random)", "[converter]") {
  test::Rows r;
  for (const char *w : {"q8_0", "q4_0"})
    ml_verify_converter_parity(test::models("random_gqa_f32.mlb").c_str(),
                               test::models(std::string("random_gqa_") + w + ".mlb").c_str(), &test::Rows::sink, &r);
  test::expect_all_pass(r);
}
