#include "runtime/file_map.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#if !defined(ML_NO_MMAP)
#include <sys/mman.h>
#endif

#include "runtime/error.h"

namespace ml {

FileMap::~FileMap() {
  if (borrowed_) return;
#if !defined(ML_NO_MMAP)
  if (mapped_) {
    munmap(data_, size_);
    return;
  }
#endif
  std::free(data_);
}

void FileMap::view(const uint8_t *data, uint64_t size) {
  data_ = const_cast<uint8_t *>(data);
  size_ = size;
  mapped_ = false;
  borrowed_ = true;
}

ml_status FileMap::open(const char *path, const char *what) {
  if (path == nullptr || path[0] == '\0') return fail(ML_E_ARG, "no %s file given", what);
  const int fd = ::open(path, O_RDONLY);
  if (fd < 0) return fail(ML_E_IO, "cannot open %s file %s: %s", what, path, std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return fail(ML_E_IO, "cannot stat %s file %s: %s", what, path, std::strerror(e));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return fail(ML_E_IO, "%s file %s is a directory", what, path);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail(ML_E_IO, "%s file %s is not a regular file", what, path);
  }
  size_ = static_cast<uint64_t>(st.st_size);
  if (size_ == 0) {
    ::close(fd);
    return fail(ML_E_FORMAT, "%s file %s is empty", what, path);
  }
  if (size_ > SIZE_MAX / 2) {
    ::close(fd);
    return fail(ML_E_NOMEM, "%s file %s is too large for this address space (%llu bytes)", what,
                path, static_cast<unsigned long long>(size_));
  }
#if !defined(ML_NO_MMAP)
  void *p = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p != MAP_FAILED) {
    ::close(fd);
    data_ = static_cast<uint8_t *>(p);
    mapped_ = true;
    return ML_OK;
  }
#endif
  // Read fallback: one 64-byte-aligned buffer (rounded up, as aligned_alloc requires).
  void *buf = nullptr;
  if (posix_memalign(&buf, 64, (size_ + 63) & ~uint64_t(63)) != 0) {
    ::close(fd);
    return fail(ML_E_NOMEM, "cannot allocate %llu bytes to read %s file %s",
                static_cast<unsigned long long>(size_), what, path);
  }
  data_ = static_cast<uint8_t *>(buf);
  uint64_t done = 0;
  while (done < size_) {
    const ssize_t n = ::read(fd, data_ + done, size_ - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = n < 0 ? errno : 0;
      ::close(fd);
      return fail(ML_E_IO, "cannot read %s file %s: %s", what, path,
                  e ? std::strerror(e) : "file shrank while reading");
    }
    done += static_cast<uint64_t>(n);
  }
  ::close(fd);
  return ML_OK;
}

}  // namespace ml
