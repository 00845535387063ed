// Buffers that end exactly at an inaccessible page, so a kernel reading one byte past its input
// faults (SIGSEGV) instead of silently reading neighbours. `align` chooses the start: 0 = end flush
// against the guard page (start as aligned as the size allows), 64 = start 64-byte aligned (end up
// to 63 bytes before the guard). Without mmap (WebAssembly) it falls back to plain aligned memory.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ml::verify {

class GuardBuffer {
 public:
  GuardBuffer() = default;
  GuardBuffer(size_t bytes, size_t align) { reset(bytes, align); }
  GuardBuffer(const GuardBuffer &) = delete;
  GuardBuffer &operator=(const GuardBuffer &) = delete;
  ~GuardBuffer();

  void reset(size_t bytes, size_t align);
  template <class T>
  T *as() const { return reinterpret_cast<T *>(data_); }
  size_t size() const { return bytes_; }

 private:
  void release();
  uint8_t *base_ = nullptr, *data_ = nullptr;
  size_t map_bytes_ = 0, bytes_ = 0;
};

}  // namespace ml::verify
