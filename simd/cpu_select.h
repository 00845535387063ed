// Choosing among installed builds (launcher/ml_launcher.cc): the ISA table's rows by name, whether
// this CPU runs a row, and the fallback-chain walk. Built on the CPU guard's own detection
// (ml::cpu_has_feature in simd/cpu_guard.cc), so the launcher and every build's guard agree.
// Compiled WITHOUT ISA flags, like the guard.
#pragma once
#include <cstddef>
#include <string>

#include "simd/isa.h"

namespace ml {

// The row named `name` ("neon-dotprod" and "neon_dotprod" both name neon_dotprod); nullptr if none.
const IsaRow *isa_by_name(const char *name);

// True when this CPU (and OS) has every feature of the row. Otherwise, when missing is not null,
// writes the missing features, comma-separated ("AVX512F, AVX512-VNNI"), truncated to cap.
bool cpu_runs_isa(const IsaRow &row, char *missing, size_t cap);

// True when the row belongs to the architecture this file was compiled for (or to `any`).
bool isa_on_host_arch(const IsaRow &row);

// The build to run: starting at this CPU's best ISA (cpu_best_isa) and walking the parent chain
// down to scalar, the first ISA that the CPU runs and for which installed(name, ctx) is true.
// nullptr when none qualifies.
const IsaRow *isa_select(bool (*installed)(const char *isa, void *ctx), void *ctx);

// The launcher's choice and its reason, shared with the Python binding's probe (launcher/ml_probe.cc).
// forced (ML_ISA; NULL or "" = none) is taken when installed, whether or not the CPU runs it; else
// isa_select. row nullptr: status 6 (forced one not installed) or 5 (no installed build runs here).
// why: "avx2 (best of installed: scalar sse2 avx2; avxvnni: CPU lacks AVX-VNNI; ...)" or
// "avx2 (forced by ML_ISA; this CPU runs it)"; installed: the installed ISAs of this architecture.
struct IsaChoice {
  const IsaRow *row = nullptr;
  int status = 0;
  bool cpu_runs = false;  // the CPU has every feature of row
  std::string why, installed;
};
IsaChoice isa_choose(bool (*installed)(const char *isa, void *ctx), void *ctx, const char *forced);

}  // namespace ml
