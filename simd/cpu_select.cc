// See simd/cpu_select.h. Compiled without ISA flags.
#include "simd/cpu_select.h"

#include <cstring>

#include "simd/cpu_guard.h"

namespace ml {

const IsaRow *isa_by_name(const char *name) {
  if (!name) return nullptr;
  char n[32];
  size_t i = 0;
  for (; name[i] && i + 1 < sizeof n; ++i) n[i] = name[i] == '-' ? '_' : name[i];
  if (name[i]) return nullptr;
  n[i] = '\0';
  for (const IsaRow &r : kIsaTable)
    if (!std::strcmp(r.name, n)) return &r;
  return nullptr;
}

bool isa_on_host_arch(const IsaRow &row) {
  return !std::strcmp(row.arch, host_arch()) || !std::strcmp(row.arch, "any");
}

bool cpu_runs_isa(const IsaRow &row, char *missing, size_t cap) {
  if (missing && cap) missing[0] = '\0';
  if (!isa_on_host_arch(row)) {
    if (missing && cap) {
      std::strncpy(missing, row.arch, cap - 1);
      missing[cap - 1] = '\0';
    }
    return false;
  }
  bool all = true;
  const char *f = row.features;
  char w[32];
  while (*f) {
    while (*f == ' ') ++f;
    size_t n = 0;
    while (f[n] && f[n] != ' ') ++n;
    if (!n) break;
    const size_t k = n < sizeof w ? n : sizeof w - 1;
    std::memcpy(w, f, k);
    w[k] = '\0';
    f += n;
    if (cpu_has_feature(w)) continue;
    if (missing && cap) {
      if (!all) std::strncat(missing, ", ", cap - std::strlen(missing) - 1);
      std::strncat(missing, w, cap - std::strlen(missing) - 1);
    }
    all = false;
  }
  return all;
}

const IsaRow *isa_select(bool (*installed)(const char *isa, void *ctx), void *ctx) {
  const IsaRow *r = isa_by_name(cpu_best_isa());
  if (!r) r = &isa_row(Isa::scalar);
  for (;;) {
    if (cpu_runs_isa(*r, nullptr, 0) && installed(r->name, ctx)) return r;
    if (r->id == Isa::scalar) return nullptr;
    r = &isa_row(r->parent);
  }
}

IsaChoice isa_choose(bool (*installed)(const char *isa, void *ctx), void *ctx, const char *forced) {
  IsaChoice c;
  for (const IsaRow &r : kIsaTable)
    if (isa_on_host_arch(r) && installed(r.name, ctx)) c.installed += (c.installed.empty() ? "" : " ") + std::string(r.name);
  if (c.installed.empty()) c.installed = "none";
  char missing[256];
  if (forced && *forced) {
    const IsaRow *row = isa_by_name(forced);
    if (!row || !isa_on_host_arch(*row) || !installed(row->name, ctx)) {
      c.status = 6;
      return c;
    }
    c.row = row;
    c.cpu_runs = cpu_runs_isa(*row, missing, sizeof missing);
    c.why = std::string(row->name) + " (forced by ML_ISA; " +
            (c.cpu_runs ? "this CPU runs it" : "this CPU lacks " + std::string(missing)) + ")";
    return c;
  }
  c.row = isa_select(installed, ctx);
  if (!c.row) {
    c.status = 5;
    return c;
  }
  c.cpu_runs = true;
  // Why not a newer one: every row of this architecture after the chosen one in the table.
  std::string reasons;
  bool after = false;
  for (const IsaRow &r : kIsaTable) {
    if (&r == c.row) {
      after = true;
      continue;
    }
    if (!after || !isa_on_host_arch(r)) continue;
    if (!cpu_runs_isa(r, missing, sizeof missing))
      reasons += std::string("; ") + r.name + ": CPU lacks " + missing;
    else if (!installed(r.name, ctx))
      reasons += std::string("; ") + r.name + ": not installed";
  }
  c.why = std::string(c.row->name) + " (best of installed: " + c.installed + reasons + ")";
  return c;
}

}  // namespace ml
