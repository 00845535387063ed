// The float kernels of the sse2 override set: the 4-lane layer's bodies (kernels/f32x4_kernels.h),
// bit-identical to kernels/scalar/. With -DML_ASM=ON, add comes from add.S instead (asm.cmake).
// Defines: ml_k_rmsnorm_sse2 ml_k_softmax_sse2 ml_k_rope_sse2 ml_k_silu_mul_sse2 ml_k_exp_f32_sse2
// Defines: ml_k_dot_f32_sse2 ml_k_axpy_f32_sse2 ml_k_dot_f32_cols_sse2 ml_k_axpy_f32_rows_sse2
// Defines: ml_k_add_sse2 (unless ML_ASM_add_sse2)
#include "kernels/f32x4_kernels.h"

ML_F4_KERNELS(sse2)
#if !defined(ML_ASM_add_sse2)
ML_F4_ADD(sse2)
#endif
