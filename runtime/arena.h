// One 64-byte-aligned allocation for every runtime buffer, sized from the model header at open.
// Layout code runs twice over the same list of reserve() calls: once to measure, once to assign.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "runtime/base.h"
#include "simd/compiler.h"

namespace ml {

class Arena : NonCopyable {
 public:
  ~Arena() { ml_aligned_free(base_); }

  // Measuring pass (base == nullptr): adds n elements; assigning pass: points *out at them.
  template <class T>
  void reserve(T **out, uint64_t n) {
    used_ = (used_ + 63) & ~uint64_t(63);
    *out = base_ ? reinterpret_cast<T *>(base_ + used_) : nullptr;
    used_ += n * sizeof(T);
  }

  // Ends the measuring pass: allocates (zeroed) and rewinds for the assigning pass.
  bool allocate() {
    const uint64_t bytes = (used_ + 63) & ~uint64_t(63);
    if (bytes > SIZE_MAX / 2) return false;
    void *p = ml_alloc_large(bytes ? size_t(bytes) : 64);  // the KV cache: huge pages once it is large
    if (p == nullptr) return false;
    base_ = static_cast<uint8_t *>(p);
    for (uint64_t i = 0; i < bytes; ++i) base_[i] = 0;
    size_ = bytes;
    used_ = 0;
    return true;
  }

  uint64_t measured() const { return (used_ + 63) & ~uint64_t(63); }
  uint64_t size() const { return size_; }

 private:
  uint8_t *base_ = nullptr;
  uint64_t used_ = 0, size_ = 0;
};

}  // namespace ml
