// RoPE on interleaved pairs, rvv override set: two pairs per 4-lane vector (simd/f32x4_math.h),
// bit-identical to kernels/scalar/rope.cc.
#include "kernels/kernels.h"
#include "simd/f32x4_math.h"

extern "C" void ml_k_rope_rvv(float *q, float *k, const float *cos_t, const float *sin_t, int head_dim, int n_heads,
                              int n_kv_heads) {
  ml::f4::rope(q, k, cos_t, sin_t, head_dim, n_heads, n_kv_heads);
}
