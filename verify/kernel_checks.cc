// Kernel verification: every kernel of kernels/kernel_table.h, every implementation this build
// compiles (kernels/binding.h for_each_variant), against the scalar reference.
//
// Every kernel but matvec_f32 must give the reference's bits (kernels/kernels.h explains why and
// defines the one evaluation order). A row's max_err is 0 when all bits matched; otherwise it
// shows how far off the worst value was, relative to the magnitude of what was summed.
//   matvec_q8/q4   int32 block sums: with W's scales 1 and x's scales one-hot on block b,
//                  y[r] = sumi(r, b) exactly, for every b. Results with random scales: bits.
//                  Rows outside [r0, r1) must stay untouched.
//   matvec_f32     |y − y_ref| / Σ_j |w·x| ≤ 1e-5 (may reassociate: a reordered float sum of n
//                  terms is off by at most (n−1)·2^-24 of that magnitude)
//   dot_f32, axpy_f32, dot_f32_cols, axpy_f32_rows, add, rope, rmsnorm, softmax, silu_mul, exp_f32,
//   quantize_q8: bits
//   exp accuracy   the reference exp against the true exp: relative error ≤ 1e-6 on [−88, 88]
// Each case runs twice: inputs ending flush against a guard page (an over-read faults), and
// inputs starting 64-byte aligned.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/binding.h"
#include "kernels/format/f16.h"
#include "kernels/panel_driver.h"
#include "verify/guard_buffer.h"
#include "verify/harness.h"
#include "verify/verify.h"
#include "simd/exp.h"

namespace ml::verify {

// The scalar implementation of a kernel, by trait.
template <class Kn>
typename Kn::fn *scalar_of() {
  return Kn::template pick<static_cast<int>(Isa::scalar)>();
}

// Runs check(rep, "kernel [impl]", fn) for every implementation of Kn compiled into this build.
template <class Kn, class Check>
void each_variant(Reporter &rep, Check check) {
  for_each_variant<Kn>([&](const char *impl, typename Kn::fn *fn) {
    char name[64];
    std::snprintf(name, sizeof name, "%s [%s]", Kn::name, impl);
    check(rep, name, fn);
  });
}

namespace {

constexpr double kTolFp = 1e-5;
constexpr double kTolExp = 1e-6;
constexpr size_t kAlignModes[2] = {0, 64};
const char *align_name(size_t a) { return a ? "aligned" : "guard-flush"; }

// Error of a value that must match bit for bit: 0 if the bits match, else |got − want| / scale
// (at least a tiny positive number, so a mismatch never passes a zero tolerance).
double bit_err(float got, float want, double scale) {
  if (std::memcmp(&got, &want, 4) == 0) return 0.0;
  const double e = std::fabs(double(got) - double(want)) / (scale > 0 ? scale : 1.0);
  return e > 1e-300 ? e : 1e-300;  // NaN stays NaN and fails too
}

// ------------------------------------------------------------------ quantized matvec

enum class Fill { random, zero_blocks, extremes };
const char *fill_name(Fill f) {
  return f == Fill::random ? "random" : f == Fill::zero_blocks ? "zero blocks" : "±127 extremes";
}

struct MatvecCase {
  const char *label;
  int rows, K, r0, r1;
  Fill fill;
};

const MatvecCase kMatvecCases[] = {
    {"K=32, one row", 1, 32, 0, 1, Fill::random},
    {"K=32, 4 rows", 4, 32, 0, 4, Fill::random},
    {"rows=37 (not a multiple of 4), r0=5", 37, 64, 5, 37, Fill::random},
    {"rows=64, r0=3, r1=61", 64, 256, 3, 61, Fill::random},
    {"rows=64, r0=16, r1=48 (panel bounds)", 64, 256, 16, 48, Fill::random},
    {"rows=7, K=96 (odd block count)", 7, 96, 0, 7, Fill::random},
    {"rows=21, K=768 (stories110M)", 21, 768, 0, 21, Fill::random},
    {"rows=6, K=5632 (TinyLlama w2), r0=1", 6, 5632, 1, 6, Fill::random},
    {"rows=13, K=256", 13, 256, 0, 13, Fill::zero_blocks},
    {"rows=9, K=512", 9, 512, 0, 9, Fill::extremes},
};

// Host-side copy of one quantized case (the source of the guarded buffers).
struct QCase {
  bool q4;
  int rows, K, nb;
  std::vector<uint8_t> wq;  // Q8: rows*K int8; Q4: rows*K/2
  std::vector<float> wd;    // rows*nb
  std::vector<int8_t> xq;   // K
  std::vector<float> xd;    // nb

  int w_val(int r, int k) const {  // dequantized integer value of W[r, k]
    if (!q4) return int8_t(wq[size_t(r) * K + k]);
    const int b = k / ML_QK, j = k % ML_QK;
    const uint8_t byte = wq[(static_cast<size_t>(r) * nb + b) * 16 + (j % 16)];
    return (j < 16 ? (byte & 0x0F) : (byte >> 4)) - 8;
  }
  int32_t sumi(int r, int b) const {
    int32_t s = 0;
    for (int j = 0; j < ML_QK; ++j) s += w_val(r, b * ML_QK + j) * xq[size_t(b) * ML_QK + j];
    return s;
  }
};

QCase make_qcase(bool q4, const MatvecCase &mc, Rng &rng) {
  QCase c;
  c.q4 = q4;
  c.rows = mc.rows;
  c.K = mc.K;
  c.nb = mc.K / ML_QK;
  c.wq.resize(q4 ? size_t(mc.rows) * mc.K / 2 : size_t(mc.rows) * mc.K);
  c.wd.resize(static_cast<size_t>(mc.rows) * c.nb);
  c.xq.resize(static_cast<size_t>(mc.K));
  c.xd.resize(static_cast<size_t>(c.nb));
  for (size_t i = 0; i < c.wq.size(); ++i) {
    uint8_t v;
    if (mc.fill == Fill::extremes)
      v = q4 ? ((i / 7) % 2 ? 0x00 : 0xFF) : uint8_t(int8_t((i / 5) % 3 == 0 ? -127 : 127));
    else
      v = q4 ? uint8_t(rng.u32()) : uint8_t(int8_t(rng.range(-127, 127)));
    c.wq[i] = v;
  }
  for (float &d : c.wd) d = rng.uniform(1e-3f, 0.1f) * (rng.u32() & 1 ? 1.0f : -1.0f);
  for (size_t k = 0; k < c.xq.size(); ++k)
    c.xq[k] = mc.fill == Fill::extremes ? int8_t((k / 3) % 2 ? -127 : 127) : int8_t(rng.range(-127, 127));
  for (float &d : c.xd) d = rng.uniform(1e-3f, 0.1f);
  if (mc.fill == Fill::zero_blocks) {
    for (int r = 0; r < c.rows; ++r)
      for (int b = 0; b < c.nb; ++b) {
        if ((r + b) % 3 == 0) {  // zero quants, nonzero scale
          if (q4)
            std::memset(&c.wq[(static_cast<size_t>(r) * c.nb + b) * 16], 0x88, 16);
          else
            std::memset(&c.wq[size_t(r) * c.K + size_t(b) * ML_QK], 0, ML_QK);
        }
        if ((r + 2 * b) % 5 == 0) c.wd[size_t(r) * c.nb + b] = 0.0f;  // zero scale
      }
    for (int b = 0; b < c.nb; b += 4) std::memset(&c.xq[size_t(b) * ML_QK], 0, ML_QK);
  }
  return c;
}

constexpr uint32_t kSentinelBits = 0x7FC0DEADu;  // a NaN no kernel computes
float sentinel() {
  float f;
  std::memcpy(&f, &kSentinelBits, 4);
  return f;
}

const char *layout_name(int layout) {
  return layout == ML_LAYOUT_PANEL16_F16 ? "panel16-f16" : layout == ML_LAYOUT_PANEL16 ? "panel16" : "rows";
}

// Layout 2 stores binary16 scales: a case's scales rounded to binary16 values (so layout 0's
// reference reads the same numbers), with subnormal halves and their negatives in some blocks of a
// panel (the integer widening's slow path) and only normal halves and zeros in the others.
std::vector<float> f16_values(const std::vector<float> &wd, int nb) {
  std::vector<float> out(wd.size());
  for (size_t i = 0; i < wd.size(); ++i) {
    out[i] = ml::f32_from_f16(ml::f16_from_f32(wd[i]));
    const size_t r = i / size_t(nb), b = i % size_t(nb);
    if ((r / 16 + b) % 3 == 1 && (r + b) % 7 == 3)  // some blocks of a panel only: the others stay normal
      out[i] = float(1 + (r * 31 + b) % 1023) * 0x1p-24f * (b % 2 ? -1.0f : 1.0f);
  }
  return out;
}

// W of `rows` x K (row-major q, d) into guarded buffers in `layout`: layouts 1 and 2 packed into
// 16-row panels (ml_pack_panel16; padding rows included), layout 2's scales as binary16 (d must
// hold binary16 values).
ml_qtensor guarded_w(GuardBuffer &wq, GuardBuffer &wd, const void *q, size_t qbytes, const float *d, int rows, int K,
                     int type, int layout, size_t align) {
  const int nb = K / ML_QK, stored = layout != ML_LAYOUT_ROWS ? (rows + 15) / 16 * 16 : rows;
  const size_t nd = size_t(stored) * size_t(nb);
  wq.reset(qbytes / size_t(rows) * size_t(stored), align);
  wd.reset(nd * (layout == ML_LAYOUT_PANEL16_F16 ? 2 : 4), align);
  std::vector<float> dp(nd);
  if (layout != ML_LAYOUT_ROWS) {
    ml_pack_panel16(wq.as<void>(), dp.data(), q, d, rows, K, type);
  } else {
    std::memcpy(wq.as<void>(), q, qbytes);
    std::memcpy(dp.data(), d, nd * 4);
  }
  if (layout != ML_LAYOUT_PANEL16_F16) {
    std::memcpy(wd.as<void>(), dp.data(), nd * 4);
    return ml_qtensor{wq.as<void>(), wd.as<float>(), rows, K, uint8_t(type), uint8_t(layout), nullptr, nullptr, nullptr};
  }
  for (size_t i = 0; i < nd; ++i) {
    const uint16_t h = ml::f16_from_f32(dp[i]);
    wd.as<uint16_t>()[i] = h;
    if (ml::f32_from_f16(h) != dp[i]) std::abort();  // a test defect: f16_values() was not applied
  }
  return ml_qtensor{wq.as<void>(), nullptr, rows, K, uint8_t(type), uint8_t(layout), wd.as<uint16_t>(), nullptr, nullptr};
}

// Runs one implementation on the case with guarded copies of every input; y has `rows` floats.
template <class Fn>
void run_qmatvec(Fn *fn, const QCase &c, const std::vector<float> &wd, const std::vector<float> &xd, int layout, int r0,
                 int r1, size_t align, std::vector<float> &y_out) {
  GuardBuffer wq, wdb, xqb(c.xq.size(), align), xdb(xd.size() * 4, align), xsb(static_cast<size_t>(c.nb) * 4, align),
      yb(static_cast<size_t>(c.rows) * 4, align);
  const int type = c.q4 ? ML_TYPE_Q4_0 : ML_TYPE_Q8_0;
  const ml_qtensor W = guarded_w(wq, wdb, c.wq.data(), c.wq.size(), wd.data(), c.rows, c.K, type, layout, align);
  std::memcpy(xqb.as<void>(), c.xq.data(), c.xq.size());
  std::memcpy(xdb.as<void>(), xd.data(), xd.size() * 4);
  ml_block_sums_q8(xsb.as<int32_t>(), c.xq.data(), c.K);
  for (int r = 0; r < c.rows; ++r) yb.as<float>()[r] = sentinel();
  ml_qact x{xqb.as<int8_t>(), xdb.as<float>(), xsb.as<int32_t>(), c.K};
  fn(yb.as<float>(), &W, &x, r0, r1);
  y_out.assign(yb.as<float>(), yb.as<float>() + c.rows);
}

template <class Fn>
void check_qmatvec(Reporter &rep, const char *name, Fn *fn, Fn *scalar, bool q4) {
  for (int layout = ML_LAYOUT_ROWS; layout <= ML_LAYOUT_PANEL16_F16; ++layout) {
    Rng rng(q4 ? 4004 : 8008);
    for (const MatvecCase &mc : kMatvecCases) {
      QCase c = make_qcase(q4, mc, rng);
      if (layout == ML_LAYOUT_PANEL16_F16) c.wd = f16_values(c.wd, c.nb);
      // Layouts 1 and 2 work on whole panels: r0 a multiple of 16, r1 one too or the last row.
      int r0 = mc.r0, r1 = mc.r1;
      if (layout != ML_LAYOUT_ROWS) {
        r0 = r0 / 16 * 16;
        r1 = r1 == mc.rows ? r1 : r1 / 16 * 16;
        if (r1 <= r0) r1 = mc.rows;
      }
      const char *lname = layout_name(layout);
      char shape[96];
      // 1. int32 block sums, bit-exact: one run per block, not repeated for layout 2, whose integer part
      // is layout 1's code (its scales are checked by 2. and below).
      if (layout != ML_LAYOUT_PANEL16_F16) {
        std::snprintf(shape, sizeof shape, "%s rows=%d K=%d r0=%d r1=%d %s: int32 block sums", lname, mc.rows, mc.K,
                      r0, r1, fill_name(mc.fill));
        ml_check sums = rep.begin("kernel", name, shape, 0.0);
        const std::vector<float> ones(c.wd.size(), 1.0f);
        std::vector<float> onehot(static_cast<size_t>(c.nb), 0.0f), y;
        for (int b = 0; b < c.nb; ++b) {
          std::fill(onehot.begin(), onehot.end(), 0.0f);
          onehot[size_t(b)] = 1.0f;
          run_qmatvec(fn, c, ones, onehot, layout, r0, r1, 0, y);
          for (int r = r0; r < r1; ++r) {
            const int32_t want = c.sumi(r, b);
            const double err = std::fabs(double(y[size_t(r)]) - double(want));
            Reporter::observe(sums, err, "row %d block %d: sum %.1f, exact %d", r, b, double(y[size_t(r)]), want);
          }
        }
        rep.end(sums);
      }
      // 2. Float results: the bits of the scalar reference on layout 0, both alignments; rows
      // outside [r0, r1) untouched.
      std::snprintf(shape, sizeof shape, "%s rows=%d K=%d r0=%d r1=%d %s: result", lname, mc.rows, mc.K, r0, r1,
                    fill_name(mc.fill));
      ml_check res = rep.begin("kernel", name, shape, 0.0);
      std::vector<float> yref, y;
      run_qmatvec(scalar, c, c.wd, c.xd, ML_LAYOUT_ROWS, r0, r1, 64, yref);
      for (size_t align : kAlignModes) {
        run_qmatvec(fn, c, c.wd, c.xd, layout, r0, r1, align, y);
        for (int r = 0; r < c.rows; ++r) {
          if (r < r0 || r >= r1) {
            if (float_bits(y[size_t(r)]) != kSentinelBits)
              Reporter::fail(res, "row %d outside [r0, r1) was written (%s)", r, align_name(align));
            continue;
          }
          double l1 = 0;
          for (int b = 0; b < c.nb; ++b)
            l1 += std::fabs(double(c.sumi(r, b)) * c.wd[size_t(r) * c.nb + b] * c.xd[size_t(b)]);
          Reporter::observe(res, bit_err(y[size_t(r)], yref[size_t(r)], l1), "row %d (%s): %.9g vs scalar %.9g", r,
                            align_name(align), double(y[size_t(r)]), double(yref[size_t(r)]));
        }
      }
      rep.end(res);
    }
  }
  // Every binary16 but the NaNs as a scale of layout 2, through the set's widening (widen16): row
  // r's one block has quants whose sum with x is 1 and dx = 1, so y[r] is its scale, ±inf and
  // subnormal halves included (NaNs left out: ARMv7 NEON returns its default NaN).
  QCase c;
  c.q4 = q4;
  c.rows = 65536;
  c.K = ML_QK;
  c.nb = 1;
  c.wq.assign(q4 ? size_t(c.rows) * 16 : size_t(c.rows) * ML_QK, q4 ? 0x88 : 0);  // Q4: nibble 8 is 0
  for (int r = 0; r < c.rows; ++r) c.wq[size_t(r) * (q4 ? 16 : ML_QK)] = q4 ? 0x89 : 1;
  c.wd.resize(size_t(c.rows));
  for (int r = 0; r < c.rows; ++r) {
    const bool nan = (r & 0x7C00) == 0x7C00 && (r & 0x3FF) != 0;
    c.wd[size_t(r)] = nan ? 0.0f : ml::f32_from_f16(uint16_t(r));
  }
  c.xq.assign(ML_QK, 0);
  c.xq[0] = 1;
  c.xd.assign(1, 1.0f);
  ml_check all = rep.begin("kernel", name, "panel16-f16 rows=65536 K=32: every half but NaN as a scale", 0.0);
  std::vector<float> yref, y;
  run_qmatvec(scalar, c, c.wd, c.xd, ML_LAYOUT_ROWS, 0, c.rows, 64, yref);
  run_qmatvec(fn, c, c.wd, c.xd, ML_LAYOUT_PANEL16_F16, 0, c.rows, 64, y);
  for (int r = 0; r < c.rows; ++r)
    Reporter::observe(all, float_bits(y[size_t(r)]) == float_bits(yref[size_t(r)]) ? 0 : 1,
                      "half 0x%04x: 0x%08x, reference 0x%08x", unsigned(r), unsigned(float_bits(y[size_t(r)])),
                      unsigned(float_bits(yref[size_t(r)])));
  rep.end(all);
}

// m tokens of random Q8_0 activations of K elements (quants, scales, exact block sums), guarded.
struct RandomTokens {
  GuardBuffer xq, xd, xs;
  std::vector<ml_qact> X;
  RandomTokens(int m, int K, Rng &rng)
      : xq(size_t(m) * size_t(K), 0), xd(size_t(m) * size_t(K / ML_QK) * 4, 0), xs(size_t(m) * size_t(K / ML_QK) * 4, 0),
        X(static_cast<size_t>(m)) {
    const size_t nbk = size_t(K / ML_QK);
    for (int t = 0; t < m; ++t) {
      int8_t *q = xq.as<int8_t>() + size_t(t) * size_t(K);
      for (int i = 0; i < K; ++i) q[i] = int8_t(rng.range(-127, 127));
      float *d = xd.as<float>() + size_t(t) * nbk;
      for (size_t b = 0; b < nbk; ++b) d[b] = rng.uniform(1e-3f, 0.1f);
      int32_t *sums = xs.as<int32_t>() + size_t(t) * nbk;
      ml_block_sums_q8(sums, q, K);
      X[size_t(t)] = ml_qact{q, d, sums, K};
    }
  }
};

// Y (m tokens, ldy apart) against the reference matvec `ref` on `W` token by token: the bits in
// [r0, r1), the sentinel elsewhere.
template <class Matvec>
void compare_tokens(ml_check &c, const float *y, size_t ldy, const std::vector<ml_qact> &X, int m, int rows, int K,
                    int r0, int r1, bool unpacked, Matvec *ref, const ml_qtensor *W) {
  std::vector<float> want(static_cast<size_t>(rows));
  for (int t = 0; t < m; ++t) {
    ref(want.data(), W, &X[size_t(t)], r0, r1);
    for (size_t r = 0; r < ldy; ++r) {
      const float got = y[size_t(t) * ldy + r];
      if (int(r) < r0 || int(r) >= r1) {
        if (float_bits(got) != kSentinelBits)
          Reporter::fail(c, "rows=%d m=%d token %d row %zu outside [r0, r1) was written", rows, m, t, r);
        continue;
      }
      Reporter::observe(c, bit_err(got, want[r], std::fabs(double(want[r]))),
                        "rows=%d K=%d m=%d token %d row %zu%s: %.9g vs the reference %.9g", rows, K, m, t, r,
                        unpacked ? " (x not packed)" : "", double(got), double(want[r]));
    }
  }
}

// matmul: Y[t·ldy + r] must be the scalar matvec's bits for every token, in every layout; rows
// outside [r0, r1) and the ldy padding stay untouched.
template <class Fn, class Matvec>
void check_qmatmul(Reporter &rep, const char *name, Fn *fn, Matvec *scalar_matvec, bool q4) {
  struct Case {
    int rows, K, r0, r1;
  };
  // K = 32768: the panel driver takes 256 KiB of activations per chunk of tokens, so 8 tokens a
  // chunk — m = 9 crosses into a second chunk (kernels/panel_driver.h, panel_matmul).
  const Case cases[] = {{37, 96, 0, 37}, {64, 256, 16, 48}, {21, 768, 0, 21}, {5, 32, 0, 5}, {20, 32768, 4, 20}};
  const int ms[] = {1, 2, 3, 4, 5, 9};
  for (int layout = ML_LAYOUT_ROWS; layout <= ML_LAYOUT_PANEL16_F16; ++layout) {
    char shape[96];
    std::snprintf(shape, sizeof shape, "%s, 5 shapes x m = 1..9 tokens: each token's matvec bits",
                  layout_name(layout));
    ml_check c = rep.begin("kernel", name, shape, 0.0);
    Rng rng(q4 ? 5151 : 6161);
    for (const Case &k : cases) {
      const MatvecCase mc{"", k.rows, k.K, k.r0, k.r1, Fill::random};
      QCase qc = make_qcase(q4, mc, rng);
      if (layout == ML_LAYOUT_PANEL16_F16) qc.wd = f16_values(qc.wd, qc.nb);
      const int type = q4 ? ML_TYPE_Q4_0 : ML_TYPE_Q8_0;
      GuardBuffer wq, wd;
      const ml_qtensor W = guarded_w(wq, wd, qc.wq.data(), qc.wq.size(), qc.wd.data(), k.rows, k.K, type, layout, 0);
      const ml_qtensor Wr{qc.wq.data(), qc.wd.data(), k.rows, k.K, uint8_t(type), ML_LAYOUT_ROWS, nullptr, nullptr, nullptr};
      for (int m : ms) {
        const size_t ldy = size_t(k.rows) + 3;
        GuardBuffer y(size_t(m) * ldy * 4, 0);
        const RandomTokens tokens(m, k.K, rng);
        const std::vector<ml_qact> &X = tokens.X;
        // Panels twice: x packed once per chunk, and prepared per block as when the pack's memory
        // cannot be had (ml::driver::pack_limit = 0).
        for (int unpacked = 0; unpacked < (layout != ML_LAYOUT_ROWS ? 2 : 1); ++unpacked) {
          ml::driver::pack_limit = unpacked ? 0 : SIZE_MAX;
          for (size_t i = 0; i < size_t(m) * ldy; ++i) y.as<float>()[i] = sentinel();
          fn(y.as<float>(), ldy, &W, X.data(), m, k.r0, k.r1);
          ml::driver::pack_limit = SIZE_MAX;
          compare_tokens(c, y.as<float>(), ldy, X, m, k.rows, k.K, k.r0, k.r1, unpacked != 0, scalar_matvec, &Wr);
        }
      }
    }
    rep.end(c);
  }
}

// GGUF's other block types (kernels/kernels.h: ml_qtensor m and d2, layout 1 only): every kind a
// kernel meets — Q4 with offsets (Q4_1, Q4_K), Q8 with offsets (Q5_1, Q5_K), Q8 with a second
// scale per 16 elements (Q6_K, Q3_K) and Q8 with both — on guarded panels, scales and offsets, with
// odd row counts (padding rows) and row ranges, against the scalar reference's bits on the same
// tensor; rows outside [r0, r1) untouched; x packed and not. run(y, ldy, W, X, m, r0, r1) is the
// kernel under test (a matvec once per token, or a matmul).
template <class Run>
void check_gguf_kinds(Reporter &rep, const char *name, bool q4, int max_m, Run run, ml_k_matvec_q8_fn *scalar) {
  struct Case {
    int rows, K, r0, r1;
  };
  const Case cases[] = {{37, 96, 0, 37}, {64, 256, 16, 48}, {21, 768, 0, 21}, {5, 32, 0, 5}, {33, 4096, 16, 33}};
  const int ms[] = {1, 2, 3, 9};
  for (int kind = 0; kind < (q4 ? 1 : 3); ++kind) {  // offsets; (Q8) a second half scale; both
    const bool offsets = kind != 1, halves = kind != 0;
    char shape[112];
    std::snprintf(shape, sizeof shape, "panel16 with %s, 5 shapes x m = 1..%d tokens: the scalar reference's bits",
                  offsets && halves ? "offsets and half scales" : offsets ? "offsets (m)" : "half scales (d2)", max_m);
    ml_check c = rep.begin("kernel", name, shape, 0.0);
    Rng rng(q4 ? 7171 : 8181 + uint32_t(kind));
    for (const Case &k : cases) {
      const MatvecCase mc{"", k.rows, k.K, k.r0, k.r1, Fill::random};
      const QCase qc = make_qcase(q4, mc, rng);
      const int type = q4 ? ML_TYPE_Q4_0 : ML_TYPE_Q8_0;
      GuardBuffer wq, wd, wm, wd2;
      ml_qtensor W = guarded_w(wq, wd, qc.wq.data(), qc.wq.size(), qc.wd.data(), k.rows, k.K, type, ML_LAYOUT_PANEL16, 0);
      const size_t nd = size_t((k.rows + 15) / 16 * 16) * size_t(qc.nb);
      const auto extra = [&](GuardBuffer &g) {  // random values in panel order, padding rows 0
        g.reset(nd * 4, 0);
        for (size_t i = 0; i < nd; ++i) {
          const int r = int(i / (16 * size_t(qc.nb))) * 16 + int(i % 16);
          g.as<float>()[i] = r < k.rows ? rng.uniform(1e-3f, 0.1f) * (rng.u32() & 1 ? 1.0f : -1.0f) : 0.0f;
        }
        return g.as<float>();
      };
      if (offsets) W.m = extra(wm);
      if (halves) W.d2 = extra(wd2);
      for (int m : ms) {
        if (m > max_m) continue;
        const size_t ldy = size_t(k.rows) + 3;
        GuardBuffer y(size_t(m) * ldy * 4, 0);
        const RandomTokens tokens(m, k.K, rng);
        const std::vector<ml_qact> &X = tokens.X;
        for (int unpacked = 0; unpacked < 2; ++unpacked) {
          ml::driver::pack_limit = unpacked ? 0 : SIZE_MAX;
          for (size_t i = 0; i < size_t(m) * ldy; ++i) y.as<float>()[i] = sentinel();
          run(y.as<float>(), ldy, &W, X.data(), m, k.r0, k.r1);
          ml::driver::pack_limit = SIZE_MAX;
          compare_tokens(c, y.as<float>(), ldy, X, m, k.rows, k.K, k.r0, k.r1, unpacked != 0, scalar, &W);
        }
      }
    }
    rep.end(c);
  }
}

// ------------------------------------------------------------------ float kernels

const int kSizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 255, 256, 257, 768, 1000, 2051};

std::vector<float> random_vec(Rng &rng, int n, float lo, float hi) {
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v) x = rng.uniform(lo, hi);
  return v;
}

// Guarded copy of a float vector.
struct GVec {
  GuardBuffer buf;
  GVec(const std::vector<float> &v, size_t align) : buf(v.size() * 4, align) {
    std::memcpy(buf.as<void>(), v.data(), v.size() * 4);
  }
  float *p() const { return buf.as<float>(); }
};

template <class Fn>
void check_matvec_f32(Reporter &rep, const char *name, Fn *fn) {
  struct Case { int rows, K, r0, r1; };
  const Case cases[] = {{1, 1, 0, 1}, {5, 7, 0, 5}, {37, 33, 5, 37}, {16, 288, 0, 16}, {3, 1000, 0, 3}, {8, 773, 1, 8}};
  {
    ml_check c = rep.begin("kernel", name, "rows 1..37, K 1..1000 (6 shapes), r0 > 0", kTolFp);
    Rng rng(3232);
    for (const Case &k : cases) {
      const auto w = random_vec(rng, k.rows * k.K, -1, 1), x = random_vec(rng, k.K, -2, 2);
      std::vector<float> yref(static_cast<size_t>(k.rows), 0.0f);
      ml_qtensor Wr{w.data(), nullptr, k.rows, k.K, ML_TYPE_F32, 0, nullptr, nullptr, nullptr};
      ml_k_matvec_f32_scalar(yref.data(), &Wr, x.data(), k.r0, k.r1);
      for (size_t align : kAlignModes) {
        GVec gw(w, align), gx(x, align), gy(std::vector<float>(static_cast<size_t>(k.rows), sentinel()), align);
        ml_qtensor W{gw.p(), nullptr, k.rows, k.K, ML_TYPE_F32, 0, nullptr, nullptr, nullptr};
        fn(gy.p(), &W, gx.p(), k.r0, k.r1);
        for (int r = 0; r < k.rows; ++r) {
          if (r < k.r0 || r >= k.r1) {
            if (float_bits(gy.p()[r]) != kSentinelBits) Reporter::fail(c, "row %d outside [r0, r1) was written", r);
            continue;
          }
          double l1 = 0;
          for (int j = 0; j < k.K; ++j) l1 += std::fabs(double(w[size_t(r) * k.K + j]) * x[size_t(j)]);
          Reporter::observe(c, std::fabs(double(gy.p()[r]) - yref[size_t(r)]) / l1, "rows=%d K=%d row %d: %.9g vs %.9g",
                            k.rows, k.K, r, double(gy.p()[r]), double(yref[size_t(r)]));
        }
      }
    }
    rep.end(c);
  }
}

template <class Fn>
void check_dot(Reporter &rep, const char *name, Fn *fn) {
  {
    ml_check c = rep.begin("kernel", name, "n = 1..2051 (24 sizes)", 0.0);
    Rng rng(77);
    for (int n : kSizes) {
      const auto a = random_vec(rng, n, -3, 3), b = random_vec(rng, n, -3, 3);
      double l1 = 0;
      for (int i = 0; i < n; ++i) l1 += std::fabs(double(a[size_t(i)]) * b[size_t(i)]);
      const float want = ml_k_dot_f32_scalar(a.data(), b.data(), n);
      for (size_t align : kAlignModes) {
        GVec ga(a, align), gb(b, align);
        const float got = fn(ga.p(), gb.p(), n);
        Reporter::observe(c, bit_err(got, want, l1), "n=%d: %.9g vs %.9g", n, double(got), double(want));
      }
    }
    rep.end(c);
  }
}

template <class Fn>
void check_axpy(Reporter &rep, const char *name, Fn *fn) {
  {
    ml_check c = rep.begin("kernel", name, "n = 1..2051 (24 sizes)", 0.0);
    Rng rng(78);
    for (int n : kSizes) {
      const auto y0 = random_vec(rng, n, -3, 3), x = random_vec(rng, n, -3, 3);
      const float a = rng.uniform(-2, 2);
      std::vector<float> want = y0;
      ml_k_axpy_f32_scalar(want.data(), a, x.data(), n);
      for (size_t align : kAlignModes) {
        GVec gy(y0, align), gx(x, align);
        fn(gy.p(), a, gx.p(), n);
        for (int i = 0; i < n; ++i) {
          const double scale = std::fabs(double(y0[size_t(i)])) + std::fabs(double(a) * x[size_t(i)]);
          Reporter::observe(c, std::fabs(double(gy.p()[i]) - want[size_t(i)]) / std::fmax(scale, 1e-30),
                            "n=%d i=%d: %.9g vs %.9g", n, i, double(gy.p()[i]), double(want[size_t(i)]));
        }
      }
    }
    rep.end(c);
  }
}

template <class Fn>
void check_add(Reporter &rep, const char *name, Fn *fn) {
  {
    ml_check c = rep.begin("kernel", name, "n = 1..2051 (24 sizes), bit-exact", 0.0);
    Rng rng(79);
    for (int n : kSizes) {
      const auto y0 = random_vec(rng, n, -3, 3), x = random_vec(rng, n, -3, 3);
      std::vector<float> want = y0;
      ml_k_add_scalar(want.data(), x.data(), n);
      for (size_t align : kAlignModes) {
        GVec gy(y0, align), gx(x, align);
        fn(gy.p(), gx.p(), n);
        for (int i = 0; i < n; ++i)
          Reporter::observe(c, float_bits(gy.p()[i]) == float_bits(want[size_t(i)]) ? 0.0 : 1.0, "n=%d i=%d: %.9g vs %.9g",
                            n, i, double(gy.p()[i]), double(want[size_t(i)]));
      }
    }
    rep.end(c);
  }
}

// Element-wise float kernels with a per-element relative tolerance. run(fn, out, in, n) applies the
// kernel; ref the same with the scalar one.
template <class Fn, class Run>
void check_elementwise(Reporter &rep, const char *name, Fn *fn, Fn *scalar, const char *shape, double tol, float lo,
                       float hi, uint64_t seed, Run run) {
  {
    ml_check c = rep.begin("kernel", name, shape, tol);
    Rng rng(seed);
    for (int n : kSizes) {
      const auto a = random_vec(rng, n, lo, hi), b = random_vec(rng, n, lo, hi);
      std::vector<float> want(static_cast<size_t>(n));
      run(scalar, want.data(), a, b, n, size_t(64));
      for (size_t align : kAlignModes) {
        std::vector<float> got(static_cast<size_t>(n));
        run(fn, got.data(), a, b, n, align);
        for (int i = 0; i < n; ++i)
          Reporter::observe(c, bit_err(got[size_t(i)], want[size_t(i)], std::fabs(want[size_t(i)])), "n=%d i=%d (in %.6g): %.9g vs %.9g", n, i,
                            double(a[size_t(i)]), double(got[size_t(i)]), double(want[size_t(i)]));
      }
    }
    rep.end(c);
  }
}

template <class Fn>
void check_rope(Reporter &rep, const char *name, Fn *fn) {
  struct Heads { int n_heads, n_kv; };
  const int head_dims[] = {2, 4, 6, 8, 16, 32, 48, 64, 128};
  const Heads heads[] = {{1, 1}, {6, 6}, {8, 4}, {32, 4}};
  {
    ml_check c = rep.begin("kernel", name, "head_dim 2..128 × heads 1/1 6/6 8/4 32/4, bit-exact", 0.0);
    Rng rng(80);
    for (int hd : head_dims)
      for (const Heads &h : heads) {
        const auto q = random_vec(rng, hd * h.n_heads, -2, 2), k = random_vec(rng, hd * h.n_kv, -2, 2);
        const auto cs = random_vec(rng, hd / 2, -1, 1), sn = random_vec(rng, hd / 2, -1, 1);
        std::vector<float> wq = q, wk = k;
        ml_k_rope_scalar(wq.data(), wk.data(), cs.data(), sn.data(), hd, h.n_heads, h.n_kv);
        for (size_t align : kAlignModes) {
          GVec gq(q, align), gk(k, align), gc(cs, align), gs(sn, align);
          fn(gq.p(), gk.p(), gc.p(), gs.p(), hd, h.n_heads, h.n_kv);
          for (size_t i = 0; i < q.size(); ++i)
            Reporter::observe(c, float_bits(gq.p()[i]) == float_bits(wq[i]) ? 0.0 : 1.0, "hd=%d heads=%d q[%zu]: %.9g vs %.9g",
                              hd, h.n_heads, i, double(gq.p()[i]), double(wq[i]));
          for (size_t i = 0; i < k.size(); ++i)
            Reporter::observe(c, float_bits(gk.p()[i]) == float_bits(wk[i]) ? 0.0 : 1.0, "hd=%d kv=%d k[%zu]: %.9g vs %.9g",
                              hd, h.n_kv, i, double(gk.p()[i]), double(wk[i]));
        }
      }
    rep.end(c);
  }
}

template <class Fn>
void check_quantize(Reporter &rep, const char *name, Fn *fn) {
  const int ks[] = {32, 64, 96, 288, 768, 2048, 5632};
  enum Mode { normal, zero_blocks, tiny_and_huge, wide };
  const char *mode_names[] = {"normal", "zero blocks", "tiny (< 2^-100) and huge blocks", "wide range"};
  {
    for (int mode = normal; mode <= wide; ++mode) {
      char shape[96];
      std::snprintf(shape, sizeof shape, "K=32..5632 (7 sizes) %s, bit-identical", mode_names[mode]);
      ml_check c = rep.begin("kernel", name, shape, 0.0);
      Rng rng(81 + uint64_t(mode));
      for (int k : ks) {
        std::vector<float> x(static_cast<size_t>(k));
        for (int i = 0; i < k; ++i) {
          const int b = i / ML_QK;
          float v = rng.normal();
          if (mode == zero_blocks && b % 3 == 0) v = 0.0f;
          if (mode == tiny_and_huge)
            v *= b % 4 == 0 ? 1e-32f : b % 4 == 1 ? 0x1p-99f : b % 4 == 2 ? 1e37f : 1.0f;
          if (mode == wide) v *= std::ldexp(1.0f, rng.range(-60, 60));
          x[size_t(i)] = v;
        }
        std::vector<int8_t> wq(static_cast<size_t>(k));
        std::vector<float> wd(static_cast<size_t>(k / ML_QK));
        std::vector<int32_t> ws(static_cast<size_t>(k / ML_QK));
        ml_qact want{wq.data(), wd.data(), ws.data(), 0};
        ml_k_quantize_q8_scalar(&want, x.data(), k);
        for (size_t align : kAlignModes) {
          GVec gx(x, align);
          GuardBuffer gq(static_cast<size_t>(k), align), gd(static_cast<size_t>(k / ML_QK) * 4, align),
              gs(static_cast<size_t>(k / ML_QK) * 4, align);
          ml_qact out{gq.as<int8_t>(), gd.as<float>(), gs.as<int32_t>(), 0};
          fn(&out, gx.p(), k);
          if (out.n != k) Reporter::fail(c, "K=%d: out->n = %d", k, out.n);
          for (int i = 0; i < k; ++i)
            Reporter::observe(c, out.q[i] == wq[size_t(i)] ? 0.0 : 1.0, "K=%d q[%d] = %d, scalar %d (x = %.9g)", k, i,
                              out.q[i], wq[size_t(i)], double(x[size_t(i)]));
          for (int b = 0; b < k / ML_QK; ++b)
            Reporter::observe(c, float_bits(out.d[b]) == float_bits(wd[size_t(b)]) ? 0.0 : 1.0, "K=%d d[%d] = %.9g, scalar %.9g",
                              k, b, double(out.d[b]), double(wd[size_t(b)]));
          for (int b = 0; b < k / ML_QK; ++b)
            Reporter::observe(c, out.s[b] == ws[size_t(b)] ? 0.0 : 1.0, "K=%d s[%d] = %d, scalar %d", k, b, out.s[b],
                              ws[size_t(b)]);
        }
      }
      rep.end(c);
    }
  }
}

}  // namespace
}  // namespace ml::verify

using namespace ml;
using namespace ml::verify;


namespace ml::verify {
namespace {

using VF = std::vector<float>;

// The element-wise checks, shared by the real run and the self-test.
template <class Fn>
void rmsnorm_checks(Reporter &rep, const char *name, Fn *fn, Fn *scalar) {
  check_elementwise(rep, name, fn, scalar, "n = 1..2051 (24 sizes), x in [-3, 3]", 0.0, -3, 3, 82,
                    [](auto *f, float *out, const VF &a, const VF &b, int n, size_t align) {
                      GVec ga(a, align), gb(b, align), go(VF(static_cast<size_t>(n)), align);
                      f(go.p(), ga.p(), gb.p(), n, 1e-5f);
                      std::memcpy(out, go.p(), size_t(n) * 4);
                    });
  check_elementwise(rep, name, fn, scalar, "n = 1..2051 in place (o == x)", 0.0, -3, 3, 83,
                    [](auto *f, float *out, const VF &a, const VF &b, int n, size_t align) {
                      GVec ga(a, align), gb(b, align);
                      f(ga.p(), ga.p(), gb.p(), n, 1e-5f);
                      std::memcpy(out, ga.p(), size_t(n) * 4);
                    });
}

template <class Fn>
void softmax_checks(Reporter &rep, const char *name, Fn *fn, Fn *scalar) {
  auto run = [](auto *f, float *out, const VF &a, const VF &, int n, size_t align) {
    GVec ga(a, align);
    f(ga.p(), n);
    std::memcpy(out, ga.p(), size_t(n) * 4);
  };
  check_elementwise(rep, name, fn, scalar, "n = 1..2051, x in [-10, 10]", 0.0, -10, 10, 84, run);
  check_elementwise(rep, name, fn, scalar, "n = 1..2051, x in [-200, 200] (underflow)", 0.0, -200, 200, 85, run);
}

template <class Fn>
void silu_checks(Reporter &rep, const char *name, Fn *fn, Fn *scalar) {
  auto run = [](auto *f, float *out, const VF &a, const VF &b, int n, size_t align) {
    GVec ga(a, align), gb(b, align);
    f(ga.p(), gb.p(), n);
    std::memcpy(out, ga.p(), size_t(n) * 4);
  };
  check_elementwise(rep, name, fn, scalar, "n = 1..2051, g in [-20, 20]", 0.0, -20, 20, 86, run);
  check_elementwise(rep, name, fn, scalar, "n = 1..2051, g in [-120, 120] (exp overflow)", 0.0, -120, 120, 87, run);
}

template <class Fn>
void exp_checks(Reporter &rep, const char *name, Fn *fn, Fn *scalar) {
  check_elementwise(rep, name, fn, scalar, "n = 1..2051, x in [-88, 88]", 0.0, -88, 88, 88,
                    [](auto *f, float *out, const VF &a, const VF &, int n, size_t align) {
                      GVec ga(a, align), go(VF(static_cast<size_t>(n)), align);
                      f(go.p(), ga.p(), n);
                      std::memcpy(out, go.p(), size_t(n) * 4);
                    });
}

// Deliberately wrong kernels: the self-test proves each kind of check can fail.
void mutant_matvec_q8_drops_last_block(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  ml_qtensor w = *W;
  w.cols -= ML_QK;  // the row stride changes too: wrong everywhere but K = 32 → one block fewer
  if (w.cols == 0) {
    for (int r = r0; r < r1; ++r) y[r] = 0.0f;
    return;
  }
  ml_qact xs = *x;
  xs.n -= ML_QK;  // (the block sums s of the first blocks are unchanged)
  ml_k_matvec_q8_scalar(y, &w, &xs, r0, r1);
}
void mutant_rmsnorm_off_by_1e4(float *o, const float *x, const float *w, int n, float eps) {
  ml_k_rmsnorm_scalar(o, x, w, n, eps);
  for (int i = 0; i < n; ++i) o[i] *= 1.0001f;
}
void mutant_dequantize_first_scale(float *y, const int8_t *q, const float *d, int n) {
  for (int i = 0; i < n; ++i) y[i] = float(q[i]) * d[0];
}
void mutant_quantize_truncates(ml_qact *out, const float *x, int k) {
  ml_k_quantize_q8_scalar(out, x, k);
  for (int i = 0; i < k; ++i) {
    const float d = out->d[i / ML_QK];
    if (d != 0.0f) out->q[i] = static_cast<int8_t>(std::trunc(x[i] * (127.0f / (d * 127.0f))));
  }
}

}  // namespace
}  // namespace ml::verify

// The exp every ISA computes (simd/exp.h) against the true exp: relative error ≤ 1e-6 on [−88, 88].
static void check_exp_accuracy(Reporter &rep) {
  ml_check c = rep.begin("kernel", "exp accuracy [simd/exp.h]", "x in [-88, 88], 2^20 points, vs double exp", kTolExp);
  const int n = 1 << 20;
  for (int i = 0; i <= n; ++i) {
    const float x = -88.0f + 176.0f * float(i) / float(n);
    const double want = std::exp(double(x)), got = double(ml::simd::exp_scalar(x));
    Reporter::observe(c, std::fabs(got - want) / want, "x = %.9g: %.9g vs %.9g", double(x), got, want);
  }
  rep.end(c);
}

// axpy_f32_rows against the one-row scalar kernel applied row after row (its definition): head sizes
// and odd ones, 1..13 rows (4-row groups and leftovers), rows packed (ld = n) or apart (ld = n + 5),
// the matrix ending at the guard page.
template <class F>
void each_rows_case(F f) {  // f(n, rows, ld)
  for (int n : {1, 3, 4, 5, 15, 16, 17, 33, 64, 65, 128, 257})
    for (int rows : {1, 2, 3, 4, 5, 8, 13})
      for (int pad : {0, 5}) f(n, rows, size_t(n + pad));
}

// dot_f32_cols: 1..65 positions (the vector groups of every width up to 16 lanes, twice, and their
// leftovers), elements 1..257, positions packed (ld = cols) or apart (ld = cols + 5, and 32: the
// cache's block), the matrix ending at the guard page; the divisor √64 = 8 (exact), √48 and √hd of
// the case (rounded quotients: a reciprocal multiply or an estimate shows), and 1; nothing written
// past s[cols - 1].
template <class Fn>
void check_dot_cols(Reporter &rep, const char *name, Fn *fn) {
  ml_check c = rep.begin("kernel", name, "n = 1..257, 1..65 positions, ld = cols, cols + 5, 32; den 8, √48, √n, 1", 0.0);
  Rng rng(79);
  for (int n : {1, 3, 4, 5, 7, 15, 16, 17, 33, 64, 65, 128, 257})
    for (int cols : {1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 31, 32, 33, 47, 65})
      for (int pad : {0, 5, -1}) {
        const size_t ld = pad < 0 ? 32 : size_t(cols + pad);
        if (ld < size_t(cols)) continue;
        const auto q = random_vec(rng, n, -3, 3), kt = random_vec(rng, int(size_t(n - 1) * ld) + cols, -3, 3);
        std::vector<float> col(static_cast<size_t>(n));
        for (float den : {8.0f, std::sqrt(48.0f), std::sqrt(float(n)), 1.0f})
          for (size_t align : kAlignModes) {
            GVec gq(q, align), gk(kt, align), gs(std::vector<float>(size_t(cols) + 1, sentinel()), align);
            fn(gs.p(), gq.p(), gk.p(), ld, cols, n, den);
            for (int p = 0; p < cols; ++p) {
              for (int i = 0; i < n; ++i) col[size_t(i)] = kt[size_t(i) * ld + size_t(p)];
              const float want = ml_k_dot_f32_scalar(q.data(), col.data(), n) / den;
              Reporter::observe(c, bit_err(gs.p()[p], want, 1.0), "n=%d cols=%d ld=%zu den=%.9g position %d: %.9g vs %.9g",
                                n, cols, ld, double(den), p, double(gs.p()[p]), double(want));
            }
            if (float_bits(gs.p()[cols]) != kSentinelBits) Reporter::fail(c, "n=%d cols=%d: s[cols] was written", n, cols);
          }
      }
  rep.end(c);
}

// dequantize_q8 against its definition float(q)·d per element: 1..10 blocks, every int8 value
// (−128 included) in every lane, scales of both signs from 2^-107 (the smallest a stored block has)
// to 1e30 and zero, inputs ending at the guard page, nothing written past y[n − 1].
template <class Fn>
void check_dequantize(Reporter &rep, const char *name, Fn *fn) {
  ml_check c = rep.begin("kernel", name, "1..10 blocks, q = -128..127, d = 0, ±2^-107 .. ±1e30", 0.0);
  Rng rng(81);
  for (int nb : {1, 2, 3, 5, 8, 10})
    for (size_t align : kAlignModes) {
      const int n = nb * ML_QK;
      GuardBuffer q(size_t(n), align), d(size_t(nb) * 4, align);
      for (int i = 0; i < n; ++i) q.as<int8_t>()[i] = int8_t(uint8_t((i * 37 + nb) & 0xFF));
      const float scales[] = {0.0f, 0x1p-107f, -0x1p-107f, 1e30f, -1e30f, 1.0f};
      for (int b = 0; b < nb; ++b)
        d.as<float>()[b] = b < 6 && nb > 5 ? scales[b] : rng.uniform(-2, 2) * (b % 2 ? 1e-3f : 1.0f);
      GVec y(std::vector<float>(size_t(n) + 1, sentinel()), align);
      fn(y.p(), q.as<int8_t>(), d.as<float>(), n);
      for (int i = 0; i < n; ++i) {
        const float want = float(q.as<int8_t>()[i]) * d.as<float>()[i / ML_QK];
        Reporter::observe(c, bit_err(y.p()[i], want, 1.0), "n=%d i=%d q=%d: %.9g vs %.9g", n, i, int(q.as<int8_t>()[i]),
                          double(y.p()[i]), double(want));
      }
      if (float_bits(y.p()[n]) != kSentinelBits) Reporter::fail(c, "n=%d: y[n] was written", n);
    }
  rep.end(c);
}

template <class Fn>
void check_axpy_rows(Reporter &rep, const char *name, Fn *fn) {
  ml_check c = rep.begin("kernel", name, "n = 1..257, 1..13 rows, ld = n, n + 5", 0.0);
  Rng rng(80);
  each_rows_case([&](int n, int rows, size_t ld) {
    const auto y0 = random_vec(rng, n, -3, 3), x = random_vec(rng, int((rows - 1) * ld) + n, -3, 3);
    const auto a = random_vec(rng, rows, -1, 1);
    std::vector<float> want = y0;
    for (int r = 0; r < rows; ++r) ml_k_axpy_f32_scalar(want.data(), a[size_t(r)], x.data() + size_t(r) * ld, n);
    for (size_t align : kAlignModes) {
      GVec gy(y0, align), ga(a, align), gx(x, align);
      fn(gy.p(), ga.p(), gx.p(), ld, rows, n);
      for (int i = 0; i < n; ++i)
        Reporter::observe(c, bit_err(gy.p()[i], want[size_t(i)], 1.0), "n=%d rows=%d ld=%zu i=%d: %.9g vs %.9g", n, rows,
                          ld, i, double(gy.p()[i]), double(want[size_t(i)]));
    }
  });
  rep.end(c);
}

extern "C" int ml_verify_kernels(ml_check_sink sink, void *user, double tol_scale) {
  Reporter rep(sink, user, tol_scale);
  each_variant<kn_matvec_q8>(rep, [](Reporter &r, const char *n, auto *f) {
    check_qmatvec(r, n, f, scalar_of<kn_matvec_q8>(), false);
    check_gguf_kinds(r, n, false, 1, [f](float *y, size_t ldy, const ml_qtensor *W, const ml_qact *X, int m, int r0, int r1) {
      for (int t = 0; t < m; ++t) f(y + size_t(t) * ldy, W, &X[t], r0, r1);
    }, scalar_of<kn_matvec_q8>());
  });
  each_variant<kn_matvec_q4>(rep, [](Reporter &r, const char *n, auto *f) {
    check_qmatvec(r, n, f, scalar_of<kn_matvec_q4>(), true);
    check_gguf_kinds(r, n, true, 1, [f](float *y, size_t ldy, const ml_qtensor *W, const ml_qact *X, int m, int r0, int r1) {
      for (int t = 0; t < m; ++t) f(y + size_t(t) * ldy, W, &X[t], r0, r1);
    }, scalar_of<kn_matvec_q4>());
  });
  each_variant<kn_matmul_q8>(rep, [](Reporter &r, const char *n, auto *f) {
    check_qmatmul(r, n, f, scalar_of<kn_matvec_q8>(), false);
    check_gguf_kinds(r, n, false, 9, f, scalar_of<kn_matvec_q8>());
  });
  each_variant<kn_matmul_q4>(rep, [](Reporter &r, const char *n, auto *f) {
    check_qmatmul(r, n, f, scalar_of<kn_matvec_q4>(), true);
    check_gguf_kinds(r, n, true, 9, f, scalar_of<kn_matvec_q4>());
  });
  each_variant<kn_matvec_f32>(rep, [](Reporter &r, const char *n, auto *f) { check_matvec_f32(r, n, f); });
  each_variant<kn_quantize_q8>(rep, [](Reporter &r, const char *n, auto *f) { check_quantize(r, n, f); });
  each_variant<kn_dequantize_q8>(rep, [](Reporter &r, const char *n, auto *f) { check_dequantize(r, n, f); });
  each_variant<kn_dot_f32>(rep, [](Reporter &r, const char *n, auto *f) { check_dot(r, n, f); });
  each_variant<kn_axpy_f32>(rep, [](Reporter &r, const char *n, auto *f) { check_axpy(r, n, f); });
  each_variant<kn_dot_f32_cols>(rep, [](Reporter &r, const char *n, auto *f) { check_dot_cols(r, n, f); });
  each_variant<kn_axpy_f32_rows>(rep, [](Reporter &r, const char *n, auto *f) { check_axpy_rows(r, n, f); });
  each_variant<kn_add>(rep, [](Reporter &r, const char *n, auto *f) { check_add(r, n, f); });
  each_variant<kn_rope>(rep, [](Reporter &r, const char *n, auto *f) { check_rope(r, n, f); });
  each_variant<kn_rmsnorm>(rep, [](Reporter &r, const char *n, auto *f) { rmsnorm_checks(r, n, f, scalar_of<kn_rmsnorm>()); });
  each_variant<kn_softmax>(rep, [](Reporter &r, const char *n, auto *f) { softmax_checks(r, n, f, scalar_of<kn_softmax>()); });
  each_variant<kn_silu_mul>(rep, [](Reporter &r, const char *n, auto *f) { silu_checks(r, n, f, scalar_of<kn_silu_mul>()); });
  each_variant<kn_exp_f32>(rep, [](Reporter &r, const char *n, auto *f) { exp_checks(r, n, f, scalar_of<kn_exp_f32>()); });
  check_exp_accuracy(rep);
  return rep.failures();
}

extern "C" int ml_verify_selftest(ml_check_sink sink, void *user) {
  Reporter rep(sink, user, 1.0);
  check_qmatvec(rep, "matvec_q8 [mutant: drops the last block]", &mutant_matvec_q8_drops_last_block,
                &ml_k_matvec_q8_scalar, false);
  rmsnorm_checks(rep, "rmsnorm [mutant: 1e-4 too large]", &mutant_rmsnorm_off_by_1e4, &ml_k_rmsnorm_scalar);
  check_quantize(rep, "quantize_q8 [mutant: truncates]", &mutant_quantize_truncates);
  check_dequantize(rep, "dequantize_q8 [mutant: first block's scale]", &mutant_dequantize_first_scale);
  return rep.failures();
}
