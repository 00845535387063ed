// The Highway static target this build's flags select, by name ("AVX2", "NEON", "EMU128", ...).
// Defined in simd/hwy_target.cc (ISA-compiled); the C API exposes it as ml_hwy_target()
// (runtime/hwy_target.cc). Tests compare it with the hwy column of simd/isa_table.h, so a missing
// flag cannot silently drop a build to Highway's scalar emulation.
#pragma once

namespace ml {
const char *hwy_static_target();
}  // namespace ml
