#include "verify/guard_buffer.h"

#include <cstdlib>
#include <cstring>

#include "simd/compiler.h"

#if defined(__unix__) && !defined(__EMSCRIPTEN__)
#include <sys/mman.h>
#include <unistd.h>
#define ML_HAVE_GUARD_PAGES 1
#endif

namespace ml::verify {

GuardBuffer::~GuardBuffer() { release(); }

void GuardBuffer::release() {
#if defined(ML_HAVE_GUARD_PAGES)
  if (base_) munmap(base_, map_bytes_);
#else
  ml_aligned_free(base_);
#endif
  base_ = data_ = nullptr;
}

void GuardBuffer::reset(size_t bytes, size_t align) {
  release();
  bytes_ = bytes;
#if defined(ML_HAVE_GUARD_PAGES)
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t data_pages = (bytes + 64 + page - 1) / page;
  map_bytes_ = (data_pages + 1) * page;
  void *p = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) std::abort();  // test harness only: out of address space
  base_ = static_cast<uint8_t *>(p);
  uint8_t *guard = base_ + data_pages * page;
  mprotect(guard, page, PROT_NONE);
  data_ = guard - bytes;
  if (align > 1) data_ = reinterpret_cast<uint8_t *>(reinterpret_cast<uintptr_t>(data_) & ~(uintptr_t(align) - 1));
#else
  map_bytes_ = bytes + 128;
  base_ = static_cast<uint8_t *>(ml_aligned_alloc(64, (map_bytes_ + 63) & ~size_t(63)));
  if (!base_) std::abort();
  data_ = base_ + 64;
  (void)align;
#endif
  std::memset(data_, 0, bytes);
}

}  // namespace ml::verify
