// Small things both halves of the runtime (runtime/ and runtime/text/) share: little-endian reads
// of untrusted file bytes (no alignment needed, the same on every host), and the base of the
// classes that own a resource and must not be copied (Arena, FileMap, ThreadPool).
#pragma once
#include <cstdint>
#include <cstring>

namespace ml {

inline uint32_t rd_u32(const uint8_t *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
inline int32_t rd_i32(const uint8_t *p) {
  const uint32_t u = rd_u32(p);
  int32_t v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}
inline float rd_f32(const uint8_t *p) {
  const uint32_t u = rd_u32(p);
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

class NonCopyable {
 public:
  NonCopyable(const NonCopyable &) = delete;
  NonCopyable &operator=(const NonCopyable &) = delete;

 protected:
  NonCopyable() = default;
  ~NonCopyable() = default;
};

}  // namespace ml
