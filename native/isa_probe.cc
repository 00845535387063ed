// ml_isa_probe: prints the best build ISA for this CPU (a row of simd/isa_table.h) and, with -v, every
// row of this architecture with supported / missing features. Compiled without ISA flags;
// tools/quickstart.sh builds it with one compiler call to pick the preset.
#include <cstdio>
#include <cstring>

#include "simd/cpu_guard.h"
#include "simd/isa.h"

int main(int argc, char **argv) {
  const char *best = ml::cpu_best_isa();
  if (argc > 1 && std::strcmp(argv[1], "-v") == 0) {
    for (const ml::IsaRow &r : ml::kIsaTable) {
      if (std::strcmp(r.arch, ml::host_arch()) != 0 && std::strcmp(r.arch, "any") != 0) continue;
      std::printf("%-13s", r.name);
      const char *f = r.features;
      bool all = true;
      char w[32];
      while (*f) {
        while (*f == ' ') ++f;
        size_t n = 0;
        while (f[n] && f[n] != ' ' && n + 1 < sizeof w) ++n;
        if (!n) break;
        std::memcpy(w, f, n);
        w[n] = '\0';
        if (!ml::cpu_has_feature(w)) {
          std::printf(" -%s", w);
          all = false;
        }
        f += n;
      }
      std::printf("%s\n", all ? " supported" : "");
    }
  }
  std::printf("%s\n", best ? best : "scalar");
  return 0;
}
