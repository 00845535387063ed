// Shared by the fuzz targets (fuzz/fuzz_*.cc) and the corpus replay driver (fuzz/replay_main.cc).
//
// Every target defines LLVMFuzzerTestOneInput and records in g_accepted whether the input was
// accepted by the loader it exercises (1) or cleanly rejected (0); the replay driver checks that
// against the seed's name (ok-* / bad-*). A broken property is reported by violated(), which
// aborts: libFuzzer saves the input as a crash, the replay test fails.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/ml.h"

namespace mlfuzz {

inline int g_accepted = -1;  // -1: the target did not decide (e.g. an input it skips)

[[noreturn]] inline void violated(const char *what, const char *detail = "") {
  std::fprintf(stderr, "fuzz property violated: %s %s\n", what, detail);
  std::abort();
}
#define ML_FUZZ_CHECK(cond, detail) \
  do {                              \
    if (!(cond)) ::mlfuzz::violated(#cond, detail); \
  } while (0)

// An exactly-sized, 64-byte-aligned copy of the input (a mapping is page-aligned, and the .mlb
// loader requires aligned arrays): ASan reports any read past its last byte.
class AlignedCopy {
 public:
  AlignedCopy(const uint8_t *data, size_t size) : size_(size) {
    void *p = nullptr;
    if (posix_memalign(&p, 64, size ? size : 1) != 0) std::abort();
    if (size) std::memcpy(p, data, size);
    p_ = static_cast<uint8_t *>(p);
  }
  ~AlignedCopy() { std::free(p_); }
  AlignedCopy(const AlignedCopy &) = delete;
  AlignedCopy &operator=(const AlignedCopy &) = delete;
  const uint8_t *data() const { return p_; }
  size_t size() const { return size_; }

 private:
  uint8_t *p_;
  size_t size_;
};

// A failure must leave one line naming the problem: non-empty, no newline, a known status.
inline void check_error_line(ml_status s) {
  const char *e = ml_last_error();
  ML_FUZZ_CHECK(s > ML_OK && s <= ML_E_ARG, e);
  ML_FUZZ_CHECK(e[0] != '\0', "empty ml_last_error()");
  ML_FUZZ_CHECK(std::strchr(e, '\n') == nullptr, e);
}

// RFC 3629: the well-formed byte sequences (its table 3-7 in the Unicode standard's words),
// written here independently of the runtime's valid_utf8 (runtime/text/unicode.cc) that it checks.
inline bool rfc3629_valid(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    const unsigned c = s[i];
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;  // range of the second byte
    if (c <= 0x7F) {
      len = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c == 0xE0) {
      len = 3, lo = 0xA0;
    } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
      len = 3;
    } else if (c == 0xED) {
      len = 3, hi = 0x9F;
    } else if (c == 0xF0) {
      len = 4, lo = 0x90;
    } else if (c >= 0xF1 && c <= 0xF3) {
      len = 4;
    } else if (c == 0xF4) {
      len = 4, hi = 0x8F;
    } else {
      return false;
    }
    if (n - i < len) return false;
    for (size_t k = 1; k < len; ++k) {
      const unsigned b = s[i + k];
      const unsigned l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
      if (b < l || b > h) return false;
    }
    i += len;
  }
  return true;
}

// Reads every byte of [p, p + n) so ASan checks the whole range.
inline unsigned touch(const void *p, uint64_t n) {
  const volatile uint8_t *b = static_cast<const volatile uint8_t *>(p);
  unsigned acc = 0;
  for (uint64_t i = 0; i < n; ++i) acc += b[i];
  return acc;
}

}  // namespace mlfuzz
