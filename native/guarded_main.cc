// The guarded main of every executable. Compiled WITHOUT ISA flags: it runs the CPU guard
// (simd/cpu_guard.cc) before any ISA-compiled code, so a build for a CPU this machine is not
// prints which feature is missing and exits with ML_E_ISA's code instead of dying of SIGILL.
// The program proper is ml_main(), compiled with the build's ISA flags.
// On ELF/Linux the check runs even earlier, from .preinit_array: before every static constructor of
// the executable, so not even a test framework's registration code compiled with ISA flags can
// execute first.
#include <cstdio>
#include <cstring>

#include <unistd.h>

#include "runtime/ml.h"
#include "simd/cpu_guard.h"

extern "C" int ml_main(int argc, char **argv);

namespace {

// Returns 0, or prints "<program>: <what is missing>" and returns ML_E_ISA.
int guard(int argc, char **argv) {
  char msg[512], line[640];
  if (ml::cpu_guard_check(msg, sizeof msg)) return 0;
  const char *prog = argc > 0 && argv && argv[0] ? std::strrchr(argv[0], '/') : nullptr;
  prog = prog ? prog + 1 : (argc > 0 && argv && argv[0] ? argv[0] : "legacy-ml");
  const int n = std::snprintf(line, sizeof line, "%s: %s\n", prog, msg);
  if (n > 0) {
    const ssize_t w = write(2, line, size_t(n) < sizeof line ? size_t(n) : sizeof line - 1);
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

}  // namespace

int main(int argc, char **argv) {
  if (const int rc = guard(argc, argv)) return rc;
  return ml_main(argc, argv);
}
