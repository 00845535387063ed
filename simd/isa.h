// The ISA table (simd/isa_table.h) as C++ data: an enum of build ISAs, each row's fields, and the
// ISA this build was compiled for (ML_ISA_ID, set by CMake). Safe to include from translation units
// compiled without ISA flags (the CPU guard, the guarded mains): nothing here executes ISA code.
#pragma once
#include <cstdint>

#include "simd/isa_table.h"

namespace ml {

enum class Isa : uint8_t {
#define ML_ISA_ENUM(arg, name, ...) name,
  ML_ISA_TABLE(ML_ISA_ENUM, _)
#undef ML_ISA_ENUM
      count
};

struct IsaRow {
  Isa id;
  const char *name;
  Isa parent;
  Isa impl;  // override set (an ISA whose kernels/<arch>/<impl>/ directory this ISA compiles)
  const char *arch;
  const char *hwy_target;
  const char *flags;
  const char *features;
};

inline constexpr IsaRow kIsaTable[] = {
#define ML_ISA_ROW(arg, name, parent, impl, arch, hwy, flags, features, ...) \
  {Isa::name, #name, Isa::parent, Isa::impl, #arch, hwy, flags, features},
    ML_ISA_TABLE(ML_ISA_ROW, _)
#undef ML_ISA_ROW
};

constexpr const IsaRow &isa_row(Isa isa) { return kIsaTable[static_cast<int>(isa)]; }

// The build's ISA. CMake defines ML_ISA_ID to the enum's name (e.g. -DML_ISA_ID=avx2).
#ifndef ML_ISA_ID
#error "ML_ISA_ID must name a row of simd/isa_table.h (CMake sets it from ML_ISA)"
#endif
inline constexpr Isa kBuildIsa = Isa::ML_ISA_ID;

}  // namespace ml
