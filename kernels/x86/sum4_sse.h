// ml::x86::total4: the combine (p0 + p1) + (p2 + p3) of the canonical sum4 order
// (kernels/kernels.h) for a __m128 of four partial sums, as the x86 matvec headers name it; it is
// the 4-lane float layer's total() (simd/f32x4.h, whose F4 is __m128 on every x86 build).
#pragma once
#include "simd/f32x4.h"

namespace ml::x86 {

inline float total4(__m128 p) { return ml::f4::total(p); }

}  // namespace ml::x86
