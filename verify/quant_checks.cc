// Quantization properties of the scalar quantizers (kernels/scalar/quantize.cc), and parity with
// the Python converter (tools/mlb.py): the C++ quantizer applied to an F32 .mlb's tensors must give
// the Q8_0 / Q4_0 .mlb's bytes exactly.
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/binding.h"
#include "kernels/kernels.h"
#include "runtime/model.h"
#include "verify/harness.h"
#include "verify/verify.h"

using namespace ml;
using namespace ml::verify;

namespace {

std::vector<float> blocks(Rng &rng, int n_blocks) {
  std::vector<float> x(static_cast<size_t>(n_blocks) * ML_QK);
  for (size_t i = 0; i < x.size(); ++i) x[i] = rng.normal() * std::ldexp(1.0f, int(i / ML_QK) % 17 - 8);
  return x;
}

}  // namespace

extern "C" int ml_verify_quant(ml_check_sink sink, void *user, double tol_scale) {
  Reporter rep(sink, user, tol_scale);
  Rng rng(4242);
  const int nb = 256;
  const std::vector<float> x = blocks(rng, nb);
  const int k = nb * ML_QK;

  {  // Q8_0: |x − q·d| ≤ d/2 (ratio to d/2; float rounding of x·id may add ~1e-5)
    ml_check c = rep.begin("quant", "q8_0 round trip", "256 blocks, scales 2^-8..2^8: |x - q*d| / (d/2)", 1.0001);
    std::vector<int8_t> q(static_cast<size_t>(k));
    std::vector<float> d(static_cast<size_t>(nb));
    ml_quantize_row_q8_0(q.data(), d.data(), x.data(), k);
    for (int i = 0; i < k; ++i) {
      const double dd = d[size_t(i / ML_QK)];
      const double err = std::fabs(double(x[size_t(i)]) - double(q[size_t(i)]) * dd);
      Reporter::observe(c, dd > 0 ? err / (dd / 2) : err, "element %d: x %.9g q %d d %.9g", i, double(x[size_t(i)]),
                        q[size_t(i)], dd);
    }
    rep.end(c);
  }
  {  // Q4_0 (GGUF rule): |x − (nibble − 8)·d| ≤ |d| (the clamp at 15 can cost up to one step)
    ml_check c = rep.begin("quant", "q4_0 round trip", "256 blocks: |x - v*d| / |d|", 1.0001);
    std::vector<uint8_t> q(static_cast<size_t>(k) / 2);
    std::vector<float> d(static_cast<size_t>(nb)), back(static_cast<size_t>(k));
    ml_quantize_row_q4_0(q.data(), d.data(), x.data(), k);
    ml_qtensor W{q.data(), d.data(), 1, k, ML_TYPE_Q4_0, 0, nullptr, nullptr, nullptr};
    ml_dequantize_row(back.data(), &W, 0);
    for (int i = 0; i < k; ++i) {
      const double dd = std::fabs(double(d[size_t(i / ML_QK)]));
      const double err = std::fabs(double(x[size_t(i)]) - double(back[size_t(i)]));
      Reporter::observe(c, dd > 0 ? err / dd : err, "element %d: x %.9g back %.9g d %.9g", i, double(x[size_t(i)]),
                        double(back[size_t(i)]), dd);
    }
    rep.end(c);
  }
  {  // Zero block and tiny block (< 2^-100): d = 0, all values 0, in both formats
    ml_check c = rep.begin("quant", "zero and tiny blocks", "q8_0 and q4_0: d = 0 and every value 0", 0.0);
    for (float scale : {0.0f, 1e-31f, -3e-35f}) {
      std::vector<float> z(ML_QK);
      for (int i = 0; i < ML_QK; ++i) z[size_t(i)] = scale * float(i % 5 - 2);
      int8_t q8[ML_QK];
      uint8_t q4[ML_QK / 2];
      float d8 = -1, d4 = -1, back[ML_QK];
      ml_quantize_row_q8_0(q8, &d8, z.data(), ML_QK);
      ml_quantize_row_q4_0(q4, &d4, z.data(), ML_QK);
      ml_qtensor W{q4, &d4, 1, ML_QK, ML_TYPE_Q4_0, 0, nullptr, nullptr, nullptr};
      ml_dequantize_row(back, &W, 0);
      Reporter::observe(c, d8 == 0.0f ? 0 : 1, "scale %g: q8 d = %g", double(scale), double(d8));
      Reporter::observe(c, d4 == 0.0f ? 0 : 1, "scale %g: q4 d = %g", double(scale), double(d4));
      for (int i = 0; i < ML_QK; ++i) {
        Reporter::observe(c, q8[i] == 0 ? 0 : 1, "scale %g: q8[%d] = %d", double(scale), i, q8[i]);
        Reporter::observe(c, back[i] == 0.0f ? 0 : 1, "scale %g: q4 value %d = %g", double(scale), i, double(back[i]));
      }
    }
    rep.end(c);
  }
  {  // ±127 clamp: the block maximum maps to ±127 exactly, nothing exceeds it
    ml_check c = rep.begin("quant", "q8_0 ±127 clamp", "max element -> ±127, |q| <= 127", 0.0);
    for (int trial = 0; trial < 64; ++trial) {
      float xb[ML_QK];
      for (float &v : xb) v = rng.uniform(-1, 1);
      const int at = trial % ML_QK;
      xb[at] = (trial & 1 ? -1.0f : 1.0f) * rng.uniform(1.0f, 1e6f);
      int8_t q[ML_QK];
      float d;
      ml_quantize_row_q8_0(q, &d, xb, ML_QK);
      Reporter::observe(c, q[at] == (trial & 1 ? -127 : 127) ? 0 : 1, "trial %d: max element -> %d", trial, q[at]);
      for (int i = 0; i < ML_QK; ++i) Reporter::observe(c, q[i] != -128 ? 0 : 1, "q = %d", q[i]);  // int8 can hold -128; the format never does
    }
    rep.end(c);
  }
  {  // Q4 nibble order: byte j = element j (low nibble) | element j+16 (high nibble)
    ml_check c = rep.begin("quant", "q4_0 nibble order", "elements j and j+16 share byte j", 0.0);
    float xb[ML_QK];
    for (int j = 0; j < ML_QK; ++j) xb[j] = float(j % 16 - 8) * (j < 16 ? 1.0f : -1.0f);
    xb[0] = -8.0f;  // the signed maximum: d = -8 / -8 = 1
    uint8_t q[ML_QK / 2];
    float d;
    ml_quantize_row_q4_0(q, &d, xb, ML_QK);
    Reporter::observe(c, d == 1.0f ? 0 : 1, "d = %g, expected 1", double(d));
    for (int j = 0; j < ML_QK / 2; ++j) {
      const int lo = q[j] & 0x0F, hi = q[j] >> 4;
      const int want_lo = int(xb[j]) + 8, want_hi = std::min(15, int(xb[j + 16]) + 8);
      Reporter::observe(c, lo == want_lo && hi == want_hi ? 0 : 1, "byte %d = 0x%02x, expected low %d high %d", j, q[j],
                        want_lo, want_hi);
    }
    rep.end(c);
  }
  {  // Q4 sign-of-max rule: a block whose largest-magnitude element is negative stores it as nibble 0
    ml_check c = rep.begin("quant", "q4_0 sign of max", "m = signed element of max |x|; d = m / -8", 0.0);
    float xb[ML_QK];
    for (int j = 0; j < ML_QK; ++j) xb[j] = 0.1f * float(j % 7);
    xb[5] = -2.0f;
    xb[9] = 2.0f;  // same magnitude, later: the first one wins
    uint8_t q[ML_QK / 2];
    float d;
    ml_quantize_row_q4_0(q, &d, xb, ML_QK);
    Reporter::observe(c, d == 0.25f ? 0 : 1, "d = %g, expected 0.25", double(d));
    Reporter::observe(c, (q[5] & 0x0F) == 0 ? 0 : 1, "element 5 nibble %d, expected 0", q[5] & 0x0F);
    Reporter::observe(c, (q[9] & 0x0F) == 15 ? 0 : 1, "element 9 nibble %d, expected 15 (clamped)", q[9] & 0x0F);
    rep.end(c);
  }
  {  // Exact ties ±(k + 0.5) at amax 127: d = 127/127 = 1 and id = 1 exactly, so x·id is the tie
     // itself and only the rounding rule decides. Q8_0 rounds half away from zero (−2.5 → −3,
     // −0.5 → −1; floor(v + 0.5) would give −2 and 0). Checked for the weight quantizer and for
     // every quantize_q8 (activation) kernel variant of this build.
    ml_check c = rep.begin("quant", "q8_0 ties round half away from zero", "amax ±127 (d = 1), x = ±(k + 0.5)", 0.0);
    const float ties[] = {0.5f, -0.5f, 1.5f, -1.5f, 2.5f, -2.5f, 63.5f, -63.5f, 125.5f, -125.5f, 126.5f, -126.5f};
    for (float sign : {1.0f, -1.0f}) {
      float xb[ML_QK] = {};
      int8_t want[ML_QK] = {};
      xb[0] = 127.0f * sign;  // amax 127 either way: d = 1
      want[0] = static_cast<int8_t>(127 * int(sign));
      for (size_t j = 0; j < sizeof ties / sizeof ties[0]; ++j) {
        xb[j + 1] = ties[j];
        want[j + 1] = static_cast<int8_t>(ties[j] > 0 ? int(ties[j]) + 1 : int(ties[j]) - 1);  // away from zero
      }
      xb[20] = -0.0f;  // a zero stays 0
      auto check_block = [&](const char *who, const int8_t *q, float d) {
        Reporter::observe(c, d == 1.0f ? 0 : 1, "%s, amax %g: d = %.9g, expected 1", who, double(xb[0]), double(d));
        for (int j = 0; j < ML_QK; ++j)
          Reporter::observe(c, q[j] == want[j] ? 0 : 1, "%s: x = %g -> q %d, expected %d (round half away from zero)",
                            who, double(xb[j]), q[j], want[j]);
      };
      int8_t q[ML_QK];
      float d = -1;
      ml_quantize_row_q8_0(q, &d, xb, ML_QK);
      check_block("ml_quantize_row_q8_0", q, d);
      for_each_variant<kn_quantize_q8>([&](const char *impl, ml_k_quantize_q8_fn *fn) {
        alignas(64) float xa[ML_QK];
        alignas(64) int8_t qa[ML_QK];
        alignas(64) float da[1];
        alignas(64) int32_t sa[1];
        std::memcpy(xa, xb, sizeof xa);
        ml_qact out{qa, da, sa, 0};
        fn(&out, xa, ML_QK);
        char who[48];
        std::snprintf(who, sizeof who, "quantize_q8 [%s]", impl);
        check_block(who, qa, da[0]);
        int32_t sum = 0;
        for (int j = 0; j < ML_QK; ++j) sum += want[j];
        Reporter::observe(c, sa[0] == sum ? 0 : 1, "%s: block sum %d, expected %d", who, sa[0], sum);
      });
    }
    rep.end(c);
  }
  {  // Q4_0 ties (GGUF's rule q = trunc(x·id + 8.5) with x·id + 8.5 ≥ 0.5: round half UP, toward
     // +inf, in units of d). m = −8 gives d = 1, id = 1: −2.5 → nibble 6 (−2), 2.5 → 11 (3), −0.5 → 8
     // (0), −7.5 → 1 (−7), 7.5 → 16 clamped to 15 (7). m = +8 gives d = −1, id = −1: x = 2.5 →
     // −2.5 + 8.5 → 6, x = −2.5 → 11. Round half away from zero would give nibbles 5, 7, 0 for −2.5, −0.5, −7.5.
    ml_check c = rep.begin("quant", "q4_0 ties round half up (x·id + 8.5 truncated)", "m = ∓8 (d = ±1), x = ±(k + 0.5)", 0.0);
    struct Tie { float x; int nibble_neg_m, nibble_pos_m; };  // expected nibble with m = −8 and with m = +8
    const Tie ties[] = {{-7.5f, 1, 15}, {-2.5f, 6, 11}, {-1.5f, 7, 10}, {-0.5f, 8, 9}, {0.5f, 9, 8},
                        {1.5f, 10, 7},  {2.5f, 11, 6},  {6.5f, 15, 2},  {7.5f, 15, 1}};
    for (float m : {-8.0f, 8.0f}) {
      float xb[ML_QK] = {};
      int want[ML_QK];
      xb[0] = m;
      want[0] = 0;  // m·id = m·(−8/m) = −8: trunc(0.5) = 0, for either sign of m
      for (int j = 1; j < ML_QK; ++j) want[j] = 8;  // the zeros
      for (size_t j = 0; j < sizeof ties / sizeof ties[0]; ++j) {
        xb[j + 1] = ties[j].x;
        want[j + 1] = m < 0 ? ties[j].nibble_neg_m : ties[j].nibble_pos_m;
      }
      uint8_t q[ML_QK / 2];
      float d = 0;
      ml_quantize_row_q4_0(q, &d, xb, ML_QK);
      Reporter::observe(c, d == m / -8.0f ? 0 : 1, "m = %g: d = %.9g, expected %g", double(m), double(d),
                        double(m / -8.0f));
      for (int j = 0; j < ML_QK; ++j) {
        const int nib = j < ML_QK / 2 ? q[j] & 0x0F : q[j - ML_QK / 2] >> 4;
        Reporter::observe(c, nib == want[j] ? 0 : 1, "m = %g: x = %g -> nibble %d, expected %d", double(m), double(xb[j]),
                          nib, want[j]);
      }
    }
    rep.end(c);
  }
  return rep.failures();
}

// Parity with the converter: every quantized tensor of q_path equals the C++ quantization of the
// same tensor of f32_path (same model, same shapes).
extern "C" int ml_verify_converter_parity(const char *f32_path, const char *q_path, ml_check_sink sink, void *user) {
  Reporter rep(sink, user, 1.0);
  Model f, q;
  char shape[96];
  std::snprintf(shape, sizeof shape, "%s", q_path);
  ml_check c = rep.begin("quant", "converter bytes == C++ quantizer", shape, 0.0);
  if (load_model(&f, f32_path) != ML_OK || load_model(&q, q_path) != ML_OK) {
    Reporter::fail(c, "cannot load: %s", ml_last_error());
    rep.end(c);
    return rep.failures();
  }
  if (f.cfg.wtype != ML_TYPE_F32 || q.cfg.wtype == ML_TYPE_F32 || f.cfg.dim != q.cfg.dim ||
      f.cfg.hidden_dim != q.cfg.hidden_dim || f.cfg.n_layers != q.cfg.n_layers || f.cfg.vocab != q.cfg.vocab) {
    Reporter::fail(c, "models differ in type or shape");
    rep.end(c);
    return rep.failures();
  }
  const bool q4 = q.cfg.wtype == ML_TYPE_Q4_0;
  auto compare = [&](const char *name, int layer, const ml_qtensor &wf, const ml_qtensor &wq) {
    const int K = wf.cols, nb = K / ML_QK;
    std::vector<uint8_t> qb(q4 ? size_t(K) / 2 : size_t(K));
    std::vector<float> db(static_cast<size_t>(nb));
    for (int r = 0; r < wf.rows; ++r) {
      const float *row = static_cast<const float *>(wf.q) + size_t(r) * K;
      if (q4)
        ml_quantize_row_q4_0(qb.data(), db.data(), row, K);
      else
        ml_quantize_row_q8_0(reinterpret_cast<int8_t *>(qb.data()), db.data(), row, K);
      const uint8_t *fq = static_cast<const uint8_t *>(wq.q) + size_t(r) * qb.size();
      const bool same = std::memcmp(qb.data(), fq, qb.size()) == 0 &&
                        std::memcmp(db.data(), wq.d + size_t(r) * nb, size_t(nb) * 4) == 0;
      Reporter::observe(c, same ? 0 : 1, "tensor %s layer %d row %d differs", name, layer, r);
    }
  };
  compare("tok_emb", -1, f.tok_emb, q.tok_emb);
  for (int l = 0; l < f.cfg.n_layers; ++l) {
    const LayerWeights &a = f.layers[size_t(l)], &b = q.layers[size_t(l)];
    compare("wq", l, a.wq, b.wq);
    compare("wk", l, a.wk, b.wk);
    compare("wv", l, a.wv, b.wv);
    compare("wo", l, a.wo, b.wo);
    compare("w1", l, a.w1, b.w1);
    compare("w2", l, a.w2, b.w2);
    compare("w3", l, a.w3, b.w3);
  }
  if (!f.cfg.shared_classifier) compare("wcls", -1, f.wcls, q.wcls);
  rep.end(c);
  return rep.failures();
}
