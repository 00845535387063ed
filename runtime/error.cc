#include "runtime/error.h"

#include <cstdarg>
#include <cstdio>

namespace {
thread_local char g_last_error[512];
}

namespace ml {

ml_status fail(ml_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(g_last_error, sizeof g_last_error, fmt, ap);
  va_end(ap);
  return s;
}

void clear_error() { g_last_error[0] = '\0'; }

}  // namespace ml

extern "C" const char *ml_last_error(void) { return g_last_error; }

extern "C" const char *ml_status_name(ml_status s) {
  switch (s) {
    case ML_OK: return "ML_OK";
    case ML_E_IO: return "ML_E_IO";
    case ML_E_FORMAT: return "ML_E_FORMAT";
    case ML_E_SHAPE: return "ML_E_SHAPE";
    case ML_E_NOMEM: return "ML_E_NOMEM";
    case ML_E_ISA: return "ML_E_ISA";
    case ML_E_ARG: return "ML_E_ARG";
  }
  return "ML_E_UNKNOWN";
}
