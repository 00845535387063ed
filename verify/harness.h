// Shared pieces of the verification checks: a deterministic RNG, result reporting.
#pragma once
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "verify/verify.h"

namespace ml::verify {

// xorshift64* — the same sequence on every platform and compiler.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed ? seed : 0x9E3779B97F4A7C15ull) {}
  uint32_t u32() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return static_cast<uint32_t>((s * 0x2545F4914F6CDD1Dull) >> 32);
  }
  float uniform(float lo, float hi) { return lo + (hi - lo) * (float(u32() >> 8) / 16777216.0f); }
  int range(int lo, int hi) { return lo + static_cast<int>(u32() % uint32_t(hi - lo + 1)); }  // inclusive
  float normal() {  // sum of uniforms: cheap, bounded, good enough for test data
    float t = 0;
    for (int i = 0; i < 6; ++i) t += uniform(-1.0f, 1.0f);
    return t * 0.7071f;
  }
};

class Reporter {
 public:
  Reporter(ml_check_sink sink, void *user, double tol_scale) : sink_(sink), user_(user), tol_scale_(tol_scale) {}

  // Starts a check row; tol is the real tolerance (scaled here).
  ml_check begin(const char *group, const char *name, const char *shape, double tol) const {
    ml_check c;
    std::memset(&c, 0, sizeof c);
    std::snprintf(c.group, sizeof c.group, "%s", group);
    std::snprintf(c.name, sizeof c.name, "%s", name);
    std::snprintf(c.shape, sizeof c.shape, "%s", shape);
    c.tol = tol * tol_scale_;
    c.pass = 1;
    return c;
  }

  // Records one compared value: err against the row's tolerance; keeps the first failure's detail.
  static void observe(ml_check &c, double err, const char *fmt = nullptr, ...) {
    ++c.cases;
    if (!(err <= c.max_err)) c.max_err = err;  // NaN sticks
    if (!(err <= c.tol) && c.pass) {
      c.pass = 0;
      if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(c.detail, sizeof c.detail, fmt, ap);
        va_end(ap);
      }
    }
  }

  static void fail(ml_check &c, const char *fmt, ...) {
    if (c.pass) {
      va_list ap;
      va_start(ap, fmt);
      std::vsnprintf(c.detail, sizeof c.detail, fmt, ap);
      va_end(ap);
    }
    c.pass = 0;
  }

  void end(ml_check &c) {
    if (c.cases == 0) {
      c.pass = 0;
      if (!c.detail[0]) std::snprintf(c.detail, sizeof c.detail, "no cases ran");
    }
    if (!c.pass) ++failures_;
    if (sink_) sink_(&c, user_);
  }

  int failures() const { return failures_; }
  double tol_scale() const { return tol_scale_; }

 private:
  ml_check_sink sink_;
  void *user_;
  double tol_scale_;
  int failures_ = 0;
};

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

}  // namespace ml::verify
