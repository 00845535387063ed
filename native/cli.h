// Small helpers shared by the command-line programs: strict number parsing and timing.
#pragma once
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>

namespace ml::cli {

inline bool parse_int(const char *s, long lo, long hi, long *out) {
  if (!s || !*s) return false;
  char *end = nullptr;
  errno = 0;
  const long v = std::strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

inline bool parse_u64(const char *s, unsigned long long *out) {
  if (!s || !*s || *s == '-') return false;
  char *end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

inline bool parse_float(const char *s, float *out) {
  if (!s || !*s) return false;
  char *end = nullptr;
  errno = 0;
  const float v = std::strtof(s, &end);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

inline double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace ml::cli
