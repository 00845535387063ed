// stream_read_sum: the sum of a buffer's 64-bit words, read with the widest plain loads every
// build of this architecture has (16-byte SSE2 / NEON loads; 8-byte loads elsewhere), 4
// independent chains, prefetching kPrefetchBytes ahead as the panel driver does (simd/prefetch.h).
// ml_bench's DRAM bandwidth probe: the loads, not the arithmetic, set its speed.
// Whole blocks of [p, p + n) are read (64 bytes; 32 without SIMD), a remainder is ignored; p is
// 16-byte aligned.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ml {
uint64_t stream_read_sum(const uint8_t *p, size_t n);
}  // namespace ml
