// libml_probe.so (Windows: ml_probe.dll): the launcher's choice of build for the Python binding (python/legacy_ml/_native.py),
// which carries one shared library per ISA (libml_<isa>.so, cmake/Python.cmake) instead of one
// program per ISA. Compiled WITHOUT ISA flags, like the launcher and the CPU guard whose detection it
// uses (simd/cpu_select.h: isa_choose), so loading it is safe on any CPU of its architecture; the
// binding loads an ISA library only after this said the CPU runs it.
#include <cstddef>
#include <cstring>
#include <string>

#include "simd/cpu_guard.h"
#include "simd/cpu_select.h"

namespace {

bool listed(const char *isa, void *ctx) {  // isa is a word of the space-separated list ctx
  const std::string list = std::string(" ") + static_cast<const char *>(ctx) + " ";
  return list.find(std::string(" ") + isa + " ") != std::string::npos;
}

void put(const std::string &s, char *out, size_t cap) {
  if (!out || !cap) return;
  const size_t n = s.size() < cap - 1 ? s.size() : cap - 1;
  std::memcpy(out, s.data(), n);
  out[n] = '\0';
}

}  // namespace

#ifdef _WIN32  // the DLL's only exports (a dllexport turns mingw's export-everything off)
#define ML_PROBE_API __declspec(dllexport)
#else  // with cmake/ml_shared.map
#define ML_PROBE_API __attribute__((visibility("default")))
#endif

extern "C" {

// The architecture this library was built for, in simd/isa_table.h's words ("x86_64", "aarch64").
ML_PROBE_API const char *ml_probe_arch(void) { return ml::host_arch(); }

// installed: the ISAs whose libraries are present, space-separated ("scalar sse2 avx2");
// forced: ML_ISA's value or NULL. Writes the chosen row's name to isa and the reason (the
// launcher's ML_LAUNCHER_CHOICE text) or the one-line error to why. Returns 0; 6 (ML_E_ARG) for a
// forced ISA that is not installed; 5 (ML_E_ISA) when no installed build runs on this CPU or the
// forced one needs features this CPU lacks (the launcher would exec it and its guard refuse).
ML_PROBE_API int ml_probe_choose(const char *installed, const char *forced, char *isa, size_t isa_cap, char *why,
                                 size_t why_cap) {
  const char *list = installed ? installed : "";
  const ml::IsaChoice c = ml::isa_choose(listed, const_cast<char *>(list), forced);
  put(c.row ? c.row->name : "", isa, isa_cap);
  if (c.status == 6) {
    put("ML_ISA=" + std::string(forced) + ": no such build in this package (installed: " + c.installed + ")", why, why_cap);
    return 6;
  }
  if (c.status == 5) {
    put("no build in this package runs on this CPU (installed: " + c.installed + ")", why, why_cap);
    return 5;
  }
  put(c.why, why, why_cap);
  return c.cpu_runs ? 0 : 5;
}

}  // extern "C"
