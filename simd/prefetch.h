// prefetch: a read hint for the line at p (never faults, even past the end of an array; nothing
// where the compiler has no builtin), and how far ahead the weight streams prefetch. Some cores'
// hardware prefetchers keep too few lines in flight for one thread to reach DRAM's speed (a KVM
// Intel Xeon: 8 GB/s for plain reads, a third more with this): the panel driver
// (kernels/panel_driver.h) and ml_bench's bandwidth probe (simd/stream_read.cc) prefetch
// kPrefetchBytes ahead of what they read. 8192: on an AMD EPYC guest 2048 left TinyLlama Q8_0
// decode at 1 thread waiting on its first loads (17 GB/s of a 25 GB/s probe) and 8192 gained 10–50 %
// at 2 threads; on the Intel guest every distance from 1024 to 8192 gained (docs/bench.md).
#pragma once
#include <cstddef>

namespace ml {

constexpr size_t kPrefetchBytes = 8192;

inline void prefetch(const void *p) {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p);
#else
  (void)p;
#endif
}

}  // namespace ml
