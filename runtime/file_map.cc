#include "runtime/file_map.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#if defined(_WIN32)
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>

#include <string>
#else
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#if !defined(ML_NO_MMAP)
#include <sys/mman.h>
#endif
#endif

#include "runtime/error.h"
#include "simd/compiler.h"

namespace ml {

#if defined(_WIN32)
namespace {

// UTF-8 -> UTF-16 for the W APIs. Invalid UTF-8 gives an empty string (no such file can exist).
std::wstring wide(const char *utf8) {
  const int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8, -1, nullptr, 0);
  if (n <= 0) return std::wstring();
  std::wstring w(static_cast<size_t>(n), L'\0');
  MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8, -1, &w[0], n);
  w.resize(static_cast<size_t>(n - 1));  // drop the terminator MultiByteToWideChar counted
  return w;
}

// GetLastError() in the words strerror() uses on Linux for the common cases, so messages read the same.
const char *win_error_text(DWORD e, char *buf, size_t cap) {
  switch (e) {
    case ERROR_FILE_NOT_FOUND:
    case ERROR_PATH_NOT_FOUND:
    case ERROR_INVALID_NAME:
    case ERROR_NO_UNICODE_TRANSLATION: return "No such file or directory";
    case ERROR_ACCESS_DENIED:
    case ERROR_SHARING_VIOLATION: return "Permission denied";
    case ERROR_NOT_ENOUGH_MEMORY:
    case ERROR_OUTOFMEMORY: return "Cannot allocate memory";
    default: std::snprintf(buf, cap, "Windows error %lu", static_cast<unsigned long>(e)); return buf;
  }
}

// Opens for reading; directories open too (FILE_FLAG_BACKUP_SEMANTICS) so callers can name them.
HANDLE open_read(const char *path) {
  const std::wstring w = wide(path);
  if (w.empty()) {
    SetLastError(ERROR_NO_UNICODE_TRANSLATION);
    return INVALID_HANDLE_VALUE;
  }
  return CreateFileW(w.c_str(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr,
                     OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL | FILE_FLAG_BACKUP_SEMANTICS, nullptr);
}

}  // namespace
#endif

namespace {

// Both platforms: a file of `size` bytes can be opened (ML_OK), or why not.
ml_status check_size(uint64_t size, const char *what, const char *path) {
  if (size == 0) return fail(ML_E_FORMAT, "%s file %s is empty", what, path);
  if (size > SIZE_MAX / 2)
    return fail(ML_E_NOMEM, "%s file %s is too large for this address space (%llu bytes)", what, path,
                static_cast<unsigned long long>(size));
  return ML_OK;
}

// The read fallback's buffer: 64-byte aligned, rounded up (as aligned_alloc requires).
ml_status read_buffer(uint64_t size, const char *what, const char *path, uint8_t **out) {
  *out = static_cast<uint8_t *>(ml_aligned_alloc(64, (size + 63) & ~uint64_t(63)));
  if (*out == nullptr)
    return fail(ML_E_NOMEM, "cannot allocate %llu bytes to read %s file %s", static_cast<unsigned long long>(size),
                what, path);
  return ML_OK;
}

}  // namespace

FileMap::~FileMap() { close(); }

void FileMap::close() {
  if (!borrowed_) {
#if !defined(ML_NO_MMAP)
    if (mapped_) {
#if defined(_WIN32)
      UnmapViewOfFile(data_);
#else
      munmap(data_, size_);
#endif
    } else
#endif
      ml_aligned_free(data_);
  }
  data_ = nullptr;
  size_ = 0;
  mapped_ = false;
  borrowed_ = false;
}

void FileMap::view(const uint8_t *data, uint64_t size) {
  data_ = const_cast<uint8_t *>(data);
  size_ = size;
  mapped_ = false;
  borrowed_ = true;
}

#if defined(_WIN32)

ml_status FileMap::open(const char *path, const char *what) {
  if (path == nullptr || path[0] == '\0') return fail(ML_E_ARG, "no %s file given", what);
  char eb[48];
  const HANDLE h = open_read(path);
  if (h == INVALID_HANDLE_VALUE)
    return fail(ML_E_IO, "cannot open %s file %s: %s", what, path, win_error_text(GetLastError(), eb, sizeof eb));
  struct Closer {  // h closed on every return (after the message has read GetLastError())
    HANDLE h;
    ~Closer() { CloseHandle(h); }
  } closer{h};
  BY_HANDLE_FILE_INFORMATION info;
  if (!GetFileInformationByHandle(h, &info))
    return fail(ML_E_IO, "cannot stat %s file %s: %s", what, path, win_error_text(GetLastError(), eb, sizeof eb));
  if (info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) return fail(ML_E_IO, "%s file %s is a directory", what, path);
  if (GetFileType(h) != FILE_TYPE_DISK) return fail(ML_E_IO, "%s file %s is not a regular file", what, path);
  size_ = (static_cast<uint64_t>(info.nFileSizeHigh) << 32) | info.nFileSizeLow;
  if (const ml_status s = check_size(size_, what, path)) return s;
#if !defined(ML_NO_MMAP)
  // The view keeps the file mapped after both handles are closed (UnmapViewOfFile releases it).
  if (const HANDLE m = CreateFileMappingW(h, nullptr, PAGE_READONLY, 0, 0, nullptr)) {
    void *p = MapViewOfFile(m, FILE_MAP_READ, 0, 0, 0);
    CloseHandle(m);
    if (p != nullptr) return adopt_mapping(p);
  }
#endif
  // Read fallback: one aligned buffer, filled in chunks ReadFile's DWORD count can hold.
  if (const ml_status s = read_buffer(size_, what, path, &data_)) return s;
  uint64_t done = 0;
  while (done < size_) {
    const uint64_t left = size_ - done;
    const DWORD want = left > (uint64_t(1) << 30) ? DWORD(1) << 30 : static_cast<DWORD>(left);
    DWORD got = 0;
    if (!ReadFile(h, data_ + done, want, &got, nullptr) || got == 0)
      return fail(ML_E_IO, "cannot read %s file %s: %s", what, path,
                  got == 0 ? "file shrank while reading" : win_error_text(GetLastError(), eb, sizeof eb));
    done += got;
  }
  return ML_OK;
}

bool path_info(const char *path, PathInfo *out) {
  const HANDLE h = open_read(path);
  if (h == INVALID_HANDLE_VALUE) return false;
  BY_HANDLE_FILE_INFORMATION info;
  const bool ok = GetFileInformationByHandle(h, &info) != 0;
  CloseHandle(h);
  if (!ok) return false;
  out->is_dir = (info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) != 0;
  out->dev = info.dwVolumeSerialNumber;
  out->ino = (static_cast<uint64_t>(info.nFileIndexHigh) << 32) | info.nFileIndexLow;
  return true;
}

std::FILE *fopen_utf8(const char *path, const char *mode) {
  const std::wstring w = wide(path), m = wide(mode);
  if (w.empty() || m.empty()) {
    errno = ENOENT;
    return nullptr;
  }
  return _wfopen(w.c_str(), m.c_str());
}

int rename_replace(const char *from, const char *to) {
  const std::wstring f = wide(from), t = wide(to);
  if (f.empty() || t.empty()) return -1;
  if (MoveFileExW(f.c_str(), t.c_str(), MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)) return 0;
  const DWORD e = GetLastError();  // errno for the caller's strerror(), as rename() sets it
  errno = e == ERROR_FILE_NOT_FOUND || e == ERROR_PATH_NOT_FOUND ? ENOENT : e == ERROR_NOT_SAME_DEVICE ? EXDEV : EACCES;
  return -1;
}

int remove_utf8(const char *path) {
  const std::wstring w = wide(path);
  return w.empty() ? -1 : _wremove(w.c_str());
}

int make_dir_utf8(const char *path) {
  const std::wstring w = wide(path);
  if (w.empty()) return -1;
  if (CreateDirectoryW(w.c_str(), nullptr)) return 0;
  return GetLastError() == ERROR_ALREADY_EXISTS ? 0 : -1;
}

#else  // POSIX

ml_status FileMap::open(const char *path, const char *what) {
  if (path == nullptr || path[0] == '\0') return fail(ML_E_ARG, "no %s file given", what);
  const int fd = ::open(path, O_RDONLY);
  if (fd < 0) return fail(ML_E_IO, "cannot open %s file %s: %s", what, path, std::strerror(errno));
  struct Closer {  // fd closed on every return (after the message has read errno)
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (fstat(fd, &st) != 0) return fail(ML_E_IO, "cannot stat %s file %s: %s", what, path, std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return fail(ML_E_IO, "%s file %s is a directory", what, path);
  if (!S_ISREG(st.st_mode)) return fail(ML_E_IO, "%s file %s is not a regular file", what, path);
  size_ = static_cast<uint64_t>(st.st_size);
  if (const ml_status s = check_size(size_, what, path)) return s;
#if !defined(ML_NO_MMAP)
  void *p = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p != MAP_FAILED) return adopt_mapping(p);
#endif
  // Read fallback: one aligned buffer.
  if (const ml_status s = read_buffer(size_, what, path, &data_)) return s;
  uint64_t done = 0;
  while (done < size_) {
    const ssize_t n = ::read(fd, data_ + done, size_ - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return fail(ML_E_IO, "cannot read %s file %s: %s", what, path,
                  n < 0 ? std::strerror(errno) : "file shrank while reading");
    done += static_cast<uint64_t>(n);
  }
  return ML_OK;
}

bool path_info(const char *path, PathInfo *out) {
  struct stat st;
  if (stat(path, &st) != 0) return false;
  out->is_dir = S_ISDIR(st.st_mode);
  out->dev = static_cast<uint64_t>(st.st_dev);
  out->ino = static_cast<uint64_t>(st.st_ino);
  return true;
}

std::FILE *fopen_utf8(const char *path, const char *mode) { return std::fopen(path, mode); }

int rename_replace(const char *from, const char *to) { return std::rename(from, to); }

int remove_utf8(const char *path) { return std::remove(path); }

int make_dir_utf8(const char *path) { return mkdir(path, 0777) == 0 || errno == EEXIST ? 0 : -1; }

#endif

}  // namespace ml
