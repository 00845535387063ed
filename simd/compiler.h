// Compiler and platform spellings in one place, so the runtime, kernels and guard stay buildable by
// GCC, Clang (Linux, mingw-w64, WebAssembly) and, untested here, MSVC (README.md, "Windows").
//   ML_PRINTF_FORMAT(f, a)   printf-style argument checking (GCC/Clang only; nothing on MSVC)
//   ml_aligned_alloc(a, n)   n bytes aligned to a (a power of two >= sizeof(void*)), or nullptr;
//   ml_aligned_free(p)       its matching free (Windows' _aligned_malloc needs _aligned_free)
//   ml_alloc_large(n)        a buffer read whole again and again (weights, KV cache, ml_bench's DRAM
//                            pools): 64-aligned; from kLargeBytes (32 MiB) on, on 2 MiB boundaries
//                            with transparent huge pages asked for (Linux madvise). ml_aligned_free
//                            frees it. Streamed through 4 KiB pages, TinyLlama's weights decoded
//                            up to a quarter slower (docs/bench.md, "Weights in huge pages"); first-touch
//                            page faults were 60 % of converting a 620 MB GGUF on a VM.
//   ml_cpu_relax()           the spin-wait hint (x86 PAUSE, AArch64 YIELD, nothing elsewhere)
// Alignment is C++11 `alignas` everywhere (MSVC accepts it); no VLAs; intrinsic headers are the
// vendor-neutral <immintrin.h>/<emmintrin.h>/<arm_neon.h>, never <x86intrin.h>. cpuid/xgetbv are
// spelled in simd/cpu_guard.cc (GCC's <cpuid.h> or MSVC's <intrin.h>).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#if defined(_MSC_VER) && !defined(__clang__)
#define ML_MSVC 1
#endif

#if defined(__GNUC__) || defined(__clang__)
#if defined(__MINGW32__)
#define ML_PRINTF_FORMAT(f, a) __attribute__((format(gnu_printf, f, a)))
#else
#define ML_PRINTF_FORMAT(f, a) __attribute__((format(printf, f, a)))
#endif
#else
#define ML_PRINTF_FORMAT(f, a)
#endif

#if defined(_WIN32)
#include <malloc.h>
#endif
#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86)
#include <emmintrin.h>  // _mm_pause (SSE2: every x86-64)
#endif

namespace ml {

inline void *ml_aligned_alloc(size_t align, size_t bytes) {
#if defined(_WIN32)
  return _aligned_malloc(bytes ? bytes : align, align);
#else
  void *p = nullptr;
  return posix_memalign(&p, align, bytes ? bytes : align) == 0 ? p : nullptr;
#endif
}

inline void ml_aligned_free(void *p) {
#if defined(_WIN32)
  _aligned_free(p);
#else
  std::free(p);
#endif
}

constexpr size_t kHugePage = size_t(1) << 21, kLargeBytes = 16 * kHugePage;

inline void *ml_alloc_large(size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (bytes >= kLargeBytes && bytes <= SIZE_MAX - kHugePage) {
    const size_t n = (bytes + kHugePage - 1) & ~(kHugePage - 1);
    void *p = ml_aligned_alloc(kHugePage, n);
    if (p) madvise(p, n, MADV_HUGEPAGE);
    return p;
  }
#endif
  return ml_aligned_alloc(64, (bytes + 63) & ~size_t(63));
}

inline void ml_cpu_relax() {
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86)
  _mm_pause();
#elif defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
  __asm__ __volatile__("yield");
#elif defined(_M_ARM64)
  __yield();
#endif
}

}  // namespace ml
