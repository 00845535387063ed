// libml_compat_probe.so (ctest python.glibc_compat, verify/glibc_compat_test.py): linked exactly as
// the Python wheel's libraries of an ML_PORTABLE build are (ml_portable_shared, cmake/Portable.cmake:
// static libstdc++/libgcc plus cmake/glibc_compat.c), it runs each path that uses a symbol
// glibc_compat.c defines or wraps, so the test proves the replacements work, not only that the
// symbol versions are low: an exception thrown several frames down and caught (libgcc's unwinder
// finds the frames through the local _dl_find_object), a thread (pthread_create/join wrapped),
// std::random_device (arc4random, local), fstat (fstat64 wrapped), expf/logf/powf (wrapped), a
// thread_local object's destructor when its thread ends (__cxa_thread_atexit_impl, local).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>

namespace {
int g_destroyed = 0;
struct Counted {
  int touched = 0;
  ~Counted() { ++g_destroyed; }
};
thread_local Counted t_counted;

[[gnu::noinline]] int deep(int n) {
  if (n == 0) throw std::runtime_error("thrown 8 frames down");
  return deep(n - 1) + 1;
}
}  // namespace

// Bits of what worked: 1 the exception, 2 the thread, 4 random_device (two draws differ), 8 fstat
// of `path` (its size in *size), 16 a thread_local's destructor ran when its thread ended. out[0..2] = expf, logf, powf(x, 1.5f).
extern "C" int ml_compat_probe(const char *path, long long *size, float x, float *out) {
  int ok = 0;
  try {
    deep(8);
  } catch (const std::runtime_error &e) {
    if (std::string(e.what()) == "thrown 8 frames down") ok |= 1;
  }
  int v = 0;
  std::thread t([&v] { v = 42; });
  t.join();
  if (v == 42) ok |= 2;
  std::thread([] { t_counted.touched = 1; }).join();
  if (g_destroyed == 1) ok |= 16;
  std::random_device rd;
  const unsigned a = rd(), b = rd();
  if (a != b) ok |= 4;
  const int fd = open(path, O_RDONLY);
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0) {
    *size = static_cast<long long>(st.st_size);
    ok |= 8;
  }
  if (fd >= 0) close(fd);
  out[0] = std::exp(x);
  out[1] = std::log(x);
  out[2] = std::pow(x, 1.5f);
  return ok;
}
