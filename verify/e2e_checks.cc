// End-to-end checks through the public API: the build's forward pass against the scalar reference
// forward (two contexts on one model in one process), teacher-forced agreement with a reference
// token sequence, and bit-identical logits for every thread count; each with an F32 or F16 KV
// cache (ml_options.kv_type), plus the F16 cache's conversions against their integer reference.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/format/f16.h"
#include "runtime/ml.h"
#include "runtime/sampler.h"
#include "verify/harness.h"
#include "verify/verify.h"

using namespace ml;
using namespace ml::verify;

namespace {

struct Ctx {
  ml_ctx *c = nullptr;
  ~Ctx() { ml_close(c); }
  bool open(const char *path, int reference, int threads, int max_seq, int batch = 0, int kv_type = 0) {
    ml_options o;
    ml_options_init(&o);
    o.kv_type = kv_type;
    o.reference = reference;
    o.n_threads = threads;
    o.max_seq = max_seq;
    o.batch = batch;
    return ml_open(&c, path, nullptr, &o) == ML_OK;
  }
};

const char *base_name(const char *p) {
  const char *s = std::strrchr(p, '/');
  return s ? s + 1 : p;
}

}  // namespace

// Logits rows: F32 models within 1e-3 (max |a − b| / max |b| per position: matvec_f32 sums in a
// per-ISA order); Q8_0/Q4_0 models bit for bit (tolerance 0; the error counted is the number of
// logits whose bits differ at a position, the detail names the first one).
extern "C" int ml_verify_e2e(const char *model_path, int logit_steps, int greedy_steps, ml_check_sink sink, void *user,
                             double tol_scale) {
  return ml_verify_e2e_kv(model_path, logit_steps, greedy_steps, 0, sink, user, tol_scale);
}

extern "C" int ml_verify_e2e_kv(const char *model_path, int logit_steps, int greedy_steps, int kv_type,
                                ml_check_sink sink, void *user, double tol_scale) {
  Reporter rep(sink, user, tol_scale);
  const int steps = logit_steps > greedy_steps ? logit_steps : greedy_steps;
  Ctx ref, isa;
  const bool opened = ref.open(model_path, 1, 1, steps, 0, kv_type) && isa.open(model_path, 0, 0, steps, 0, kv_type);
  ml_model_info info;
  std::memset(&info, 0, sizeof info);
  if (opened) ml_get_info(ref.c, &info);
  const bool exact = opened && info.wtype != 0;  // quantized weights: exact integer sums, the same float steps
  char shape[96];
  std::snprintf(shape, sizeof shape, "%s, kv %s, %d teacher-forced positions", base_name(model_path),
                ml_kv_type_name(kv_type), logit_steps);
  ml_check lc = exact ? rep.begin("e2e", "logits bit-identical to scalar forward", shape, 0.0)
                      : rep.begin("e2e", "logits vs scalar forward", shape, 1e-3);
  std::snprintf(shape, sizeof shape, "%s, kv %s, %d greedy tokens", base_name(model_path), ml_kv_type_name(kv_type),
                greedy_steps);
  ml_check gc = rep.begin("e2e", "greedy tokens vs scalar forward", shape, 0.0);
  if (!opened) {
    Reporter::fail(lc, "cannot open %s: %s", model_path, ml_last_error());
    Reporter::fail(gc, "cannot open %s: %s", model_path, ml_last_error());
    rep.end(lc);
    rep.end(gc);
    return rep.failures();
  }
  const int V = info.vocab;
  // One pass of max(logit_steps, greedy_steps) positions: each context generates greedily from BOS
  // with its own tokens (the greedy check); while they agree, both were fed the same tokens, so the
  // logits of the first logit_steps positions are compared along the reference's greedy path. Once
  // the tokens differ the greedy check has failed, and later logits are not compared (their inputs
  // differ). Under qemu the forward dominates the suite: one pass instead of two.
  int ta = 1, tb = 1;
  bool same_path = true;
  for (int pos = 0; pos < steps; ++pos) {
    const float *a = nullptr, *b = nullptr;
    if (ml_eval(ref.c, ta, pos, &a) != ML_OK || ml_eval(isa.c, tb, pos, &b) != ML_OK) {
      if (pos < logit_steps) Reporter::fail(lc, "eval failed at %d: %s", pos, ml_last_error());
      if (pos < greedy_steps) Reporter::fail(gc, "eval failed at %d: %s", pos, ml_last_error());
      break;
    }
    if (pos < logit_steps && !same_path) {
      Reporter::fail(lc, "position %d: not compared, the greedy tokens differ before it", pos);
    } else if (pos < logit_steps && exact) {
      int differ = 0, first = -1;
      for (int i = 0; i < V; ++i)
        if (float_bits(a[i]) != float_bits(b[i])) {
          ++differ;
          if (first < 0) first = i;
        }
      const int f = first < 0 ? 0 : first;
      Reporter::observe(lc, differ, "position %d: %d logits differ; the first, logit %d: %.9g (0x%08x) vs scalar %.9g "
                        "(0x%08x)", pos, differ, f, double(b[f]), unsigned(float_bits(b[f])), double(a[f]),
                        unsigned(float_bits(a[f])));
    } else if (pos < logit_steps) {
      double max_abs = 0, max_diff = 0;
      int at = 0;
      for (int i = 0; i < V; ++i) {
        max_abs = std::fmax(max_abs, std::fabs(double(a[i])));
        const double d = std::fabs(double(a[i]) - double(b[i]));
        if (!(d <= max_diff)) {
          max_diff = d;
          at = i;
        }
      }
      Reporter::observe(lc, max_abs > 0 ? max_diff / max_abs : max_diff, "position %d, logit %d: %.7g vs scalar %.7g",
                        pos, at, double(b[at]), double(a[at]));
    }
    ta = argmax(a, V);
    tb = argmax(b, V);
    if (pos < greedy_steps) Reporter::observe(gc, ta == tb ? 0 : 1, "position %d: token %d, scalar %d", pos, tb, ta);
    same_path = same_path && ta == tb;
  }
  rep.end(lc);
  rep.end(gc);
  return rep.failures();
}

extern "C" double ml_verify_teacher_forced(const char *model_path, const int *tokens, int n, int reference) {
  return ml_verify_teacher_forced_kv(model_path, tokens, n, reference, 0);
}

extern "C" double ml_verify_teacher_forced_kv(const char *model_path, const int *tokens, int n, int reference, int kv_type) {
  Ctx ctx;
  if (n < 2 || !ctx.open(model_path, reference, 0, n, 0, kv_type)) return -1;
  ml_model_info info;
  ml_get_info(ctx.c, &info);
  int agree = 0;
  for (int pos = 0; pos + 1 < n; ++pos) {
    const float *logits = nullptr;
    if (ml_eval(ctx.c, tokens[pos], pos, &logits) != ML_OK) return -1;
    agree += argmax(logits, info.vocab) == tokens[pos + 1];
  }
  return double(agree) / double(n - 1);
}

extern "C" int ml_verify_threads(const char *model_path, int steps, int max_threads, ml_check_sink sink, void *user) {
  return ml_verify_threads_kv(model_path, steps, max_threads, 0, sink, user);
}

extern "C" int ml_verify_threads_kv(const char *model_path, int steps, int max_threads, int kv_type, ml_check_sink sink,
                                    void *user) {
  Reporter rep(sink, user, 1.0);
  char shape[96];
  std::snprintf(shape, sizeof shape, "%s, kv %s, %d positions, 2..%d threads vs 1", base_name(model_path),
                ml_kv_type_name(kv_type), steps, max_threads);
  ml_check c = rep.begin("e2e", "logits bit-identical across thread counts", shape, 0.0);
  Ctx one;
  if (!one.open(model_path, 0, 1, steps, 0, kv_type)) {
    Reporter::fail(c, "cannot open %s: %s", model_path, ml_last_error());
    rep.end(c);
    return rep.failures();
  }
  ml_model_info info;
  ml_get_info(one.c, &info);
  std::vector<float> want(static_cast<size_t>(steps) * size_t(info.vocab));
  std::vector<int> path(static_cast<size_t>(steps) + 1, 1);
  for (int pos = 0; pos < steps; ++pos) {
    const float *l = nullptr;
    ml_eval(one.c, path[size_t(pos)], pos, &l);
    std::memcpy(&want[size_t(pos) * size_t(info.vocab)], l, size_t(info.vocab) * 4);
    path[size_t(pos) + 1] = argmax(l, info.vocab);
  }
  for (int t = 2; t <= max_threads; ++t) {
    Ctx ctx;
    if (!ctx.open(model_path, 0, t, steps, 0, kv_type)) {
      Reporter::fail(c, "cannot open with %d threads: %s", t, ml_last_error());
      continue;
    }
    for (int pos = 0; pos < steps; ++pos) {
      const float *l = nullptr;
      ml_eval(ctx.c, path[size_t(pos)], pos, &l);
      const bool same = std::memcmp(l, &want[size_t(pos) * size_t(info.vocab)], size_t(info.vocab) * 4) == 0;
      Reporter::observe(c, same ? 0 : 1, "%d threads, position %d: logits differ from 1 thread", t, pos);
    }
  }
  rep.end(c);
  return rep.failures();
}

extern "C" int ml_verify_same_logits(const char *path_a, const char *path_b, int steps, ml_check_sink sink, void *user) {
  Reporter rep(sink, user, 1.0);
  char shape[96];
  std::snprintf(shape, sizeof shape, "%s vs %s, %d positions", base_name(path_a), base_name(path_b), steps);
  ml_check c = rep.begin("e2e", "same weights, other layout: logits bit-identical", shape, 0.0);
  Ctx a, b;
  if (!a.open(path_a, 0, 0, steps) || !b.open(path_b, 0, 0, steps)) {
    Reporter::fail(c, "cannot open: %s", ml_last_error());
    rep.end(c);
    return rep.failures();
  }
  ml_model_info info;
  ml_get_info(a.c, &info);
  int token = 1;
  for (int pos = 0; pos < steps; ++pos) {
    const float *la = nullptr, *lb = nullptr;
    if (ml_eval(a.c, token, pos, &la) != ML_OK || ml_eval(b.c, token, pos, &lb) != ML_OK) {
      Reporter::fail(c, "eval failed at %d: %s", pos, ml_last_error());
      break;
    }
    const bool same = std::memcmp(la, lb, sizeof(float) * size_t(info.vocab)) == 0;
    Reporter::observe(c, same ? 0 : 1, "position %d: logits differ", pos);
    token = argmax(la, info.vocab);
  }
  rep.end(c);
  return rep.failures();
}

extern "C" int ml_verify_batch(const char *model_path, int n, const int *chunks, int n_chunks, ml_check_sink sink,
                               void *user) {
  return ml_verify_batch_kv(model_path, n, chunks, n_chunks, 0, sink, user);
}

// The one-by-one logits are computed once and compared with every chunk size's batched run (under
// qemu the one-by-one pass is the larger part of the time).
extern "C" int ml_verify_batch_kv(const char *model_path, int n, const int *chunks, int n_chunks, int kv_type,
                                  ml_check_sink sink, void *user) {
  Reporter rep(sink, user, 1.0);
  Ctx one;
  ml_model_info info{};
  std::vector<float> want;
  std::vector<int> tokens(static_cast<size_t>(n));
  std::string one_error;  // why the one-by-one logits are missing, if they are (empty: they are not)
  if (!one.open(model_path, 0, 0, n, 0, kv_type)) {
    one_error = std::string("cannot open ") + model_path + ": " + ml_last_error();
  } else {
    ml_get_info(one.c, &info);
    for (int t = 0; t < n; ++t) tokens[size_t(t)] = t == 0 ? 1 : (t * 7919 + 13) % info.vocab;
    want.resize(size_t(n) * size_t(info.vocab));
    for (int t = 0; t < n && one_error.empty(); ++t) {
      const float *l = nullptr;
      if (ml_eval(one.c, tokens[size_t(t)], t, &l) != ML_OK) {
        one_error = "eval failed at " + std::to_string(t) + ": " + ml_last_error();
      } else {
        std::memcpy(&want[size_t(t) * size_t(info.vocab)], l, sizeof(float) * size_t(info.vocab));
      }
    }
  }
  for (int i = 0; i < n_chunks; ++i) {
    const int chunk = chunks[i];
    char shape[96];
    std::snprintf(shape, sizeof shape, "%s, kv %s, %d tokens in batches of %d", base_name(model_path),
                  ml_kv_type_name(kv_type), n, chunk);
    ml_check c = rep.begin("e2e", "batched prefill: logits bit-identical to one by one", shape, 0.0);
    Ctx batched;
    if (!one_error.empty()) {
      Reporter::fail(c, "%s", one_error.c_str());
    } else if (!batched.open(model_path, 0, 0, n, chunk, kv_type)) {
      Reporter::fail(c, "cannot open %s: %s", model_path, ml_last_error());
    } else {
      for (int t0 = 0; t0 < n; t0 += chunk) {
        const int m = n - t0 < chunk ? n - t0 : chunk;
        const float *l = nullptr;
        if (ml_eval_batch(batched.c, &tokens[size_t(t0)], m, t0, 1, &l) != ML_OK) {
          Reporter::fail(c, "eval_batch failed at %d: %s", t0, ml_last_error());
          break;
        }
        for (int t = 0; t < m; ++t) {
          const bool same = std::memcmp(l + size_t(t) * size_t(info.vocab), &want[size_t(t0 + t) * size_t(info.vocab)],
                                        sizeof(float) * size_t(info.vocab)) == 0;
          Reporter::observe(c, same ? 0 : 1, "position %d (batch at %d): logits differ", t0 + t, t0);
        }
      }
    }
    rep.end(c);
  }
  return rep.failures();
}

// The binary16 conversions (kernels/format/f16.h): the build's kv_load_f16 (F16C,
// AVX-512, NEON or integer) against the integer reference on all 65536 halves in rows of 61 (SIMD
// bodies and tails), exactness (half → float → half gives the half back; NaNs come back quiet),
// and round to nearest even on store at named ties and limits.
extern "C" int ml_verify_kv_f16(ml_check_sink sink, void *user) {
  Reporter rep(sink, user, 1.0);
  ml_check load = rep.begin("kv", "kv_load_f16 vs integer reference", "all 65536 halves, rows of 61", 0.0);
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = uint16_t(i);
  std::vector<float> got(65536), want(65536);
  for (size_t i = 0; i < all.size(); i += 61) {
    const int n = int(std::min<size_t>(61, all.size() - i));
    kv_load_f16(&got[i], &all[i], n);
    kv_load_f16_ref(&want[i], &all[i], n);
  }
  for (size_t i = 0; i < all.size(); ++i) {
    const bool nan = (i & 0x7C00u) == 0x7C00u && (i & 0x3FFu) != 0;
    const uint16_t back = f16_from_f32(want[i]);
    const bool exact = nan ? back == uint16_t(i | 0x200u) : back == uint16_t(i);
    Reporter::observe(load, float_bits(got[i]) == float_bits(want[i]) && exact ? 0 : 1,
                      "half 0x%04zx: build 0x%08x, reference 0x%08x, back to half 0x%04x", i,
                      unsigned(float_bits(got[i])), unsigned(float_bits(want[i])), unsigned(back));
  }
  rep.end(load);
  // Layout 2's scale widening in this file's build (each kernel set's own is checked through its
  // matvecs by the kernels test): widen16 and its integer form, bit for bit, in groups of 16 that
  // hold only normal halves and ±0 (the fast path) or also others.
  ml_check wide =
      rep.begin("kv", "widen16 and widen16_int vs integer reference", "all 65536 halves, groups of 16", 0.0);
  std::vector<float> got_int(65536);
  for (size_t i = 0; i < all.size(); i += 16) {
    widen16(&got[i], &all[i]);
    widen16_int(&got_int[i], &all[i]);
  }
  // And groups of normal halves with ±0 among them (the fast path's zero case).
  const uint16_t mixed[16] = {0x3C00, 0x0000, 0xBC00, 0x8000, 0x0400, 0x8400, 0x7BFF, 0xFBFF,
                              0x1234, 0x0000, 0x8000, 0x2E66, 0xC000, 0x0401, 0x0000, 0x5555};
  float mixed_got[16], mixed_int[16];
  widen16(mixed_got, mixed);
  widen16_int(mixed_int, mixed);
  for (int i = 0; i < 16; ++i) {
    const uint32_t ref = float_bits(f32_from_f16(mixed[i]));
    Reporter::observe(wide, float_bits(mixed_got[i]) == ref && float_bits(mixed_int[i]) == ref ? 0 : 1,
                      "normal/zero group, half 0x%04x: widen16 0x%08x, widen16_int 0x%08x, reference 0x%08x",
                      unsigned(mixed[i]), unsigned(float_bits(mixed_got[i])), unsigned(float_bits(mixed_int[i])),
                      unsigned(ref));
  }
  for (size_t i = 0; i < all.size(); ++i)
    Reporter::observe(wide,
                      float_bits(got[i]) == float_bits(want[i]) && float_bits(got_int[i]) == float_bits(want[i]) ? 0 : 1,
                      "half 0x%04zx: widen16 0x%08x, widen16_int 0x%08x, reference 0x%08x", i,
                      unsigned(float_bits(got[i])), unsigned(float_bits(got_int[i])), unsigned(float_bits(want[i])));
  rep.end(wide);
  ml_check store = rep.begin("kv", "kv_store_f16 rounds to nearest even", "ties, limits, subnormals", 0.0);
  struct Case { float x; uint16_t h; };
  const Case cases[] = {
      {1.0f, 0x3C00}, {-2.0f, 0xC000}, {0.0f, 0x0000}, {-0.0f, 0x8000},
      {1.0f + 0x1p-11f, 0x3C00},                 // tie between 1 and 1 + 2^-10: even (1)
      {1.0f + 3 * 0x1p-11f, 0x3C02},             // tie: even (1 + 2^-9)
      {1.0f + 0x1p-11f + 0x1p-20f, 0x3C01},      // just above the tie: up
      {65504.0f, 0x7BFF}, {65519.996f, 0x7BFF}, {65520.0f, 0x7C00}, {1e30f, 0x7C00}, {-1e30f, 0xFC00},
      {0x1p-14f, 0x0400}, {0x1p-24f, 0x0001}, {0x1p-25f, 0x0000}, {0x1.8p-25f, 0x0001},  // 2^-25: tie to 0
      {3 * 0x1p-25f, 0x0002},                    // 1.5 units: tie to even (2)
      {0x1.ffcp-15f, 0x0400},                    // largest subnormal + half a unit: tie, rounds up to normal
      {1e-40f, 0x0000}, {-1e-40f, 0x8000}};
  for (const Case &k : cases) {
    uint16_t h;
    kv_store_f16(&h, &k.x, 1);
    Reporter::observe(store, h == k.h ? 0 : 1, "%a: 0x%04x, want 0x%04x", double(k.x), unsigned(h), unsigned(k.h));
  }
  const float inf = want[0x7C00], nan = want[0x7E01];
  uint16_t hi, hn;
  kv_store_f16(&hi, &inf, 1);
  kv_store_f16(&hn, &nan, 1);
  Reporter::observe(store, hi == 0x7C00 && hn == 0x7E01 ? 0 : 1, "inf 0x%04x, nan 0x%04x", unsigned(hi), unsigned(hn));
  rep.end(store);
  return rep.failures();
}
