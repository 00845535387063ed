// ml_hwy_target() of the C API (runtime/ml.h): the Highway static target of this build, as
// simd/hwy_target.h names it (ml_run --version, the browser page, the hwy-column test).
#include "runtime/ml.h"
#include "simd/hwy_target.h"

extern "C" const char *ml_hwy_target(void) { return ml::hwy_static_target(); }
