// Failure reporting for library code: return the status, keep one line for ml_last_error().
#pragma once
#include "runtime/ml.h"
#include "simd/compiler.h"

namespace ml {

// Formats the message (printf-style) into this thread's last-error slot and returns s.
ml_status fail(ml_status s, const char *fmt, ...) ML_PRINTF_FORMAT(2, 3);

void clear_error();

}  // namespace ml
