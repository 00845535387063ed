// The guarded main of every executable. Compiled WITHOUT ISA flags: it runs the CPU guard
// (simd/cpu_guard.cc) before any ISA-compiled code, so a build for a CPU this machine is not
// prints which feature is missing and exits with ML_E_ISA's code instead of dying of SIGILL.
// The program proper is ml_main(), compiled with the build's ISA flags.
// On ELF/Linux the check runs even earlier, from .preinit_array: before every static constructor of
// the executable, so not even a test framework's registration code compiled with ISA flags can
// execute first.
// On Windows main() also puts stdin, stdout and stderr in binary mode before ml_main runs: the C
// runtime's text mode would turn every "\n" into "\r\n" (and stop reading at ^Z), and the programs'
// output must be byte-identical to Linux's (docs/windows.md).
#include <cstdio>
#include <cstring>

#if defined(_WIN32)
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#include <shellapi.h>  // CommandLineToArgvW (shell32)
#include <fcntl.h>
#include <io.h>

#include <string>
#include <vector>
#else
#include <unistd.h>
#endif

#include "runtime/ml.h"
#include "simd/cpu_guard.h"

extern "C" int ml_main(int argc, char **argv);

namespace {

// Returns 0, or prints "<program>: <what is missing>" and returns ML_E_ISA.
int guard(int argc, char **argv) {
  char msg[512], line[640];
  if (ml::cpu_guard_check(msg, sizeof msg)) return 0;
  const char *prog = argc > 0 && argv && argv[0] ? argv[0] : "legacy-ml";
  for (const char *p = prog; *p; ++p) {
#if defined(_WIN32)
    if (*p == '\\') prog = p + 1;  // Windows paths: either separator
#endif
    if (*p == '/') prog = p + 1;
  }
  const int n = std::snprintf(line, sizeof line, "%s: %s\n", prog, msg);
  if (n > 0) {
    const size_t len = size_t(n) < sizeof line ? size_t(n) : sizeof line - 1;
#if defined(_WIN32)
    const int w = _write(2, line, static_cast<unsigned>(len));
#else
    const ssize_t w = write(2, line, len);
#endif
    (void)w;
  }
  return ML_E_ISA;
}

#if defined(__linux__) && defined(__ELF__)
void preinit_guard(int argc, char **argv, char **) {
  if (guard(argc, argv) != 0) _exit(ML_E_ISA);
}
__attribute__((section(".preinit_array"), used)) void (*const ml_preinit_guard)(int, char **, char **) = preinit_guard;
#endif

#if defined(_WIN32)
// The command line as UTF-8 (argv in the C runtime's main is in the ANSI code page, which cannot
// hold every file name): the programs take UTF-8 paths on every platform (runtime/file_map.h).
struct Utf8Args {
  std::vector<std::string> text;
  std::vector<char *> argv;
  bool read() {
    int n = 0;
    wchar_t **w = CommandLineToArgvW(GetCommandLineW(), &n);
    if (w == nullptr) return false;
    for (int i = 0; i < n; ++i) {
      const int len = WideCharToMultiByte(CP_UTF8, 0, w[i], -1, nullptr, 0, nullptr, nullptr);
      std::string s(len > 0 ? size_t(len) : 1, '\0');
      if (len > 0) WideCharToMultiByte(CP_UTF8, 0, w[i], -1, &s[0], len, nullptr, nullptr);
      s.resize(std::strlen(s.c_str()));
      text.push_back(std::move(s));
    }
    LocalFree(w);
    for (std::string &s : text) argv.push_back(&s[0]);
    argv.push_back(nullptr);
    return true;
  }
};
#endif

}  // namespace

int main(int argc, char **argv) {
  if (const int rc = guard(argc, argv)) return rc;
#if defined(_WIN32)
  _setmode(_fileno(stdin), _O_BINARY);
  _setmode(_fileno(stdout), _O_BINARY);
  _setmode(_fileno(stderr), _O_BINARY);
  static Utf8Args args;  // lives as long as the program (ml_main may keep argv pointers)
  if (args.read()) return ml_main(static_cast<int>(args.text.size()), args.argv.data());
#endif
  return ml_main(argc, argv);
}
