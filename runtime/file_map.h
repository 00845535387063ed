// A read-only view of a whole file: mmap (POSIX) or CreateFileMappingW/MapViewOfFile (Windows) by
// default, or read into one 64-byte-aligned buffer when built with ML_NO_MMAP (CMake option
// ML_MMAP=OFF) or when mapping is unavailable.
// Paths are UTF-8 everywhere; on Windows they are converted to UTF-16 for the wide (W) APIs, so a
// model in a folder named with non-ASCII characters opens as on Linux. The helpers below the class
// are the same for the programs' output files (ml_run --logits).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "runtime/base.h"
#include "runtime/ml.h"

namespace ml {

class FileMap : NonCopyable {
 public:
  ~FileMap();

  // Opens `path` (what = "model" / "tokenizer", for messages). Directories, missing and
  // unreadable files are ML_E_IO with the path named.
  ml_status open(const char *path, const char *what);
  // Views a caller's buffer instead of a file (not copied, not freed; it must outlive this
  // object). Used to fuzz the loaders from memory through the same validation code.
  void view(const uint8_t *data, uint64_t size);
  // Lets go of the file or view (unmaps or frees it); the object can be opened again.
  void close();
  const uint8_t *data() const { return data_; }
  uint64_t size() const { return size_; }
  bool mapped() const { return mapped_; }

 private:
  ml_status adopt_mapping(void *p) {  // open(): the file is mapped at p
    data_ = static_cast<uint8_t *>(p);
    mapped_ = true;
    return ML_OK;
  }
  uint8_t *data_ = nullptr;
  uint64_t size_ = 0;
  bool mapped_ = false;
  bool borrowed_ = false;  // view(): the caller owns data_
};

// What is at a path: exists, is a directory, and an identity (device/volume, inode/file index)
// that is equal for two names of the same file. False when nothing is there or it cannot be read.
struct PathInfo {
  bool is_dir = false;
  uint64_t dev = 0, ino = 0;
};
bool path_info(const char *path, PathInfo *out);
// std::fopen with a UTF-8 path (Windows: _wfopen). Binary modes are the caller's to ask for.
std::FILE *fopen_utf8(const char *path, const char *mode);
// Renames from -> to, replacing an existing `to` (POSIX rename; Windows: MoveFileExW with
// MOVEFILE_REPLACE_EXISTING, since rename() there fails when the target exists). 0 on success.
int rename_replace(const char *from, const char *to);
// std::remove with a UTF-8 path (Windows: _wremove). 0 on success.
int remove_utf8(const char *path);
// Creates the folder `path` (one level; its parent must exist). 0 on success or when it exists.
int make_dir_utf8(const char *path);

}  // namespace ml
