// Deliberate bugs for the mutation audit (tools/mutants.sh, issue "mutants caught").
//
// A build configured with -DML_MUTANTS=ON (never a normal preset) compiles each mutant point as
//   if (ML_MUTANT("rmsnorm_eps")) { ...the bug... } else { ...the real code... }
// and the environment variable ML_MUTANT=<name> switches exactly that one on at run time. In every
// other build ML_MUTANT(name) is the constant false, so the bug is compiled out.
//
// The names are listed once, in tools/mutants.sh (the script runs the scalar suite once per name
// and fails unless some test catches every one). Safe to call from ISA-compiled code: the lookup
// runs lazily on first use, never from a static initializer.
#pragma once

#if defined(ML_MUTANTS) && ML_MUTANTS
#include <cstdlib>
#include <cstring>

namespace ml {
inline bool mutant_active(const char *name) {
  static const char *const selected = std::getenv("ML_MUTANT");
  return selected != nullptr && std::strcmp(selected, name) == 0;
}
}  // namespace ml
#define ML_MUTANT(name) (::ml::mutant_active(name))
#else
#define ML_MUTANT(name) false
#endif
