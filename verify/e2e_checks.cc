// End-to-end checks through the public API: the build's forward pass against the scalar reference
// forward (two contexts on one model in one process), teacher-forced agreement with a reference
// token sequence, and bit-identical logits for every thread count.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

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
  bool open(const char *path, int reference, int threads, int max_seq, int batch = 0) {
    ml_options o;
    ml_options_init(&o);
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
  Reporter rep(sink, user, tol_scale);
  const int steps = logit_steps > greedy_steps ? logit_steps : greedy_steps;
  Ctx ref, isa;
  const bool opened = ref.open(model_path, 1, 1, steps) && isa.open(model_path, 0, 0, steps);
  ml_model_info info;
  std::memset(&info, 0, sizeof info);
  if (opened) ml_get_info(ref.c, &info);
  const bool exact = opened && info.wtype != 0;  // quantized weights: exact integer sums, the same float steps
  char shape[96];
  std::snprintf(shape, sizeof shape, "%s, %d teacher-forced positions", base_name(model_path), logit_steps);
  ml_check lc = exact ? rep.begin("e2e", "logits bit-identical to scalar forward", shape, 0.0)
                      : rep.begin("e2e", "logits vs scalar forward", shape, 1e-3);
  std::snprintf(shape, sizeof shape, "%s, %d greedy tokens", base_name(model_path), greedy_steps);
  ml_check gc = rep.begin("e2e", "greedy tokens vs scalar forward", shape, 0.0);
  if (!opened) {
    Reporter::fail(lc, "cannot open %s: %s", model_path, ml_last_error());
    Reporter::fail(gc, "cannot open %s: %s", model_path, ml_last_error());
    rep.end(lc);
    rep.end(gc);
    return rep.failures();
  }
  const int V = info.vocab;
  // Logits along the reference's greedy path, both contexts fed the same tokens.
  int token = 1;
  for (int pos = 0; pos < logit_steps; ++pos) {
    const float *a = nullptr, *b = nullptr;
    if (ml_eval(ref.c, token, pos, &a) != ML_OK || ml_eval(isa.c, token, pos, &b) != ML_OK) {
      Reporter::fail(lc, "eval failed at %d: %s", pos, ml_last_error());
      break;
    }
    if (exact) {
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
    } else {
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
    token = argmax(a, V);
  }
  // Greedy generation from BOS in each context independently.
  int ta = 1, tb = 1;
  for (int pos = 0; pos < greedy_steps; ++pos) {
    const float *a = nullptr, *b = nullptr;
    if (ml_eval(ref.c, ta, pos, &a) != ML_OK || ml_eval(isa.c, tb, pos, &b) != ML_OK) {
      Reporter::fail(gc, "eval failed at %d: %s", pos, ml_last_error());
      break;
    }
    ta = argmax(a, V);
    tb = argmax(b, V);
    Reporter::observe(gc, ta == tb ? 0 : 1, "position %d: token %d, scalar %d", pos, tb, ta);
  }
  rep.end(lc);
  rep.end(gc);
  return rep.failures();
}

extern "C" double ml_verify_teacher_forced(const char *model_path, const int *tokens, int n, int reference) {
  Ctx ctx;
  if (n < 2 || !ctx.open(model_path, reference, 0, n)) return -1;
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
  Reporter rep(sink, user, 1.0);
  char shape[96];
  std::snprintf(shape, sizeof shape, "%s, %d positions, 2..%d threads vs 1", base_name(model_path), steps, max_threads);
  ml_check c = rep.begin("e2e", "logits bit-identical across thread counts", shape, 0.0);
  Ctx one;
  if (!one.open(model_path, 0, 1, steps)) {
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
    if (!ctx.open(model_path, 0, t, steps)) {
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

extern "C" int ml_verify_batch(const char *model_path, int n, int chunk, ml_check_sink sink, void *user) {
  Reporter rep(sink, user, 1.0);
  char shape[96];
  std::snprintf(shape, sizeof shape, "%s, %d tokens in batches of %d", base_name(model_path), n, chunk);
  ml_check c = rep.begin("e2e", "batched prefill: logits bit-identical to one by one", shape, 0.0);
  Ctx one, batched;
  if (!one.open(model_path, 0, 0, n) || !batched.open(model_path, 0, 0, n, chunk)) {
    Reporter::fail(c, "cannot open %s: %s", model_path, ml_last_error());
    rep.end(c);
    return rep.failures();
  }
  ml_model_info info;
  ml_get_info(one.c, &info);
  std::vector<int> tokens(static_cast<size_t>(n));
  for (int t = 0; t < n; ++t) tokens[size_t(t)] = t == 0 ? 1 : (t * 7919 + 13) % info.vocab;
  std::vector<float> want(size_t(n) * size_t(info.vocab));
  for (int t = 0; t < n; ++t) {
    const float *l = nullptr;
    if (ml_eval(one.c, tokens[size_t(t)], t, &l) != ML_OK) {
      Reporter::fail(c, "eval failed at %d: %s", t, ml_last_error());
      break;
    }
    std::memcpy(&want[size_t(t) * size_t(info.vocab)], l, sizeof(float) * size_t(info.vocab));
  }
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
  rep.end(c);
  return rep.failures();
}
