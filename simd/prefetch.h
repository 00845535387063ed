// prefetch: a read hint for the line at p (never faults, even past the end of an array; nothing
// where the compiler has no builtin), and how far ahead the weight streams prefetch. Some cores'
// hardware prefetchers keep too few lines in flight for one thread to reach DRAM's speed (a KVM
// Intel Xeon: 8 GB/s for plain reads, a third more with this): the panel driver
// (kernels/panel_driver.h) and ml_bench's bandwidth probe (simd/stream_read.cc) prefetch
// kPrefetchBytes ahead of what they read.
#pragma once
#include <cstddef>

namespace ml {

constexpr size_t kPrefetchBytes = 2048;

inline void prefetch(const void *p) {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p);
#else
  (void)p;
#endif
}

}  // namespace ml
