// Which Highway static target this build's flags select (the Highway bodies, kernels/hwy/, are
// compiled only where simd/isa_table.h names one) (ml_run --version, and a
// test that compares it with the hwy column of simd/isa_table.h so a missing flag cannot silently
// drop a build to Highway's scalar emulation).
#include <hwy/highway.h>

#include "runtime/ml.h"

extern "C" const char *ml_hwy_target(void) { return hwy::TargetName(HWY_STATIC_TARGET); }
