// Attention vector kernels, rvv override set: dot_f32 (sum4 of a·b) and axpy_f32 (y += a·x, product then
// sum), one row or several: the 4-lane bodies of simd/f32x4_math.h (kernels/f32x4_attention.h).
#include "kernels/f32x4_attention.h"

ML_F4_ATTENTION_KERNELS(rvv)
