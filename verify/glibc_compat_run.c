/* glibc_compat_run (ctest python.glibc_compat in the cross presets, verify/glibc_compat_test.py):
   where no Python of the build's architecture is here to load the probe with ctypes, this program
   does what ctypes does, under the preset's emulator: dlopen libglibc_compat_probe.so, call
   ml_compat_probe(FILE, &size, 2.5f, out) (verify/glibc_compat_probe.cc) and print
   "bits size expf logf powf" on one line, the floats in C's exact hex form (%a).
     glibc_compat_run PROBE.so FILE
   Exit status 0, or 1 (a line on stderr) when the library or its function does not load. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef int (*ml_probe_fn)(const char *, long long *, float, float *);

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: glibc_compat_run PROBE.so FILE\n");
    return 1;
  }
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  void *sym = lib ? dlsym(lib, "ml_compat_probe") : NULL;
  if (!sym) {
    fprintf(stderr, "glibc_compat_run: %s\n", dlerror());
    return 1;
  }
  ml_probe_fn probe;
  memcpy(&probe, &sym, sizeof probe); /* object pointer to function pointer, as POSIX allows */
  long long size = -1;
  float out[3] = {0, 0, 0};
  const int bits = probe(argv[2], &size, 2.5f, out);
  printf("%d %lld %a %a %a\n", bits, size, (double)out[0], (double)out[1], (double)out[2]);
  return 0;
}
