// ml::hwy_static_target() (simd/hwy_target.h): hwy::TargetName of the static target Highway picks
// under this translation unit's ISA flags, the same flags as every ISA-compiled unit.
#include "simd/hwy_target.h"

#include <hwy/highway.h>

namespace ml {
const char *hwy_static_target() { return hwy::TargetName(HWY_STATIC_TARGET); }
}  // namespace ml
