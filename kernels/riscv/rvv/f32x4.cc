// The float kernels of the rvv override set: the 4-lane layer's bodies (kernels/f32x4_kernels.h;
// simd/f32x4.h's RVV backend at vl = 4), bit-identical to kernels/scalar/.
// Defines: ml_k_rmsnorm_rvv ml_k_softmax_rvv ml_k_rope_rvv ml_k_silu_mul_rvv ml_k_exp_f32_rvv
// Defines: ml_k_dot_f32_rvv ml_k_axpy_f32_rvv ml_k_dot_f32_cols_rvv ml_k_axpy_f32_rows_rvv
// Defines: ml_k_add_rvv
#include "kernels/f32x4_kernels.h"

ML_F4_KERNELS(rvv)
ML_F4_ADD(rvv)
