// A read-only view of a whole file: mmap (POSIX) by default, or read into one 64-byte-aligned
// buffer when built with ML_NO_MMAP (CMake option ML_MMAP=OFF) or when mapping is unavailable.
#pragma once
#include <cstddef>
#include <cstdint>

#include "runtime/ml.h"

namespace ml {

class FileMap {
 public:
  FileMap() = default;
  FileMap(const FileMap &) = delete;
  FileMap &operator=(const FileMap &) = delete;
  ~FileMap();

  // Opens `path` (what = "model" / "tokenizer", for messages). Directories, missing and
  // unreadable files are ML_E_IO with the path named.
  ml_status open(const char *path, const char *what);
  // Views a caller's buffer instead of a file (not copied, not freed; it must outlive this
  // object). Used to fuzz the loaders from memory through the same validation code.
  void view(const uint8_t *data, uint64_t size);
  const uint8_t *data() const { return data_; }
  uint64_t size() const { return size_; }
  bool mapped() const { return mapped_; }

 private:
  uint8_t *data_ = nullptr;
  uint64_t size_ = 0;
  bool mapped_ = false;
  bool borrowed_ = false;  // view(): the caller owns data_
};

}  // namespace ml
