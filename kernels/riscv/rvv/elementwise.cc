// Element-wise kernels, rvv override set. References: kernels/scalar/elementwise.cc.
//   silu_mul: g_i = (g_i · (1 / (1 + exp(−g_i)))) · u_i — exp_m2 (rvv_common.h, exp_scalar's
//             bits), vfadd, vfrdiv (1 / d, IEEE division), two vfmul: the reference's operations
//   add:      y_i += x_i (one IEEE add per element)
//   exp_f32:  the vector exp itself (the exp of softmax and silu_mul, tested on its own)
// Whole vectors with vl from vsetvl, so the tail is no special case: bit-identical at every VLEN.
// Tests: verify/kernel_checks.cc.
#include "kernels/kernels.h"
#include "kernels/riscv/rvv/rvv_common.h"

extern "C" void ml_k_silu_mul_rvv(float *g, const float *u, int n) {
  for (size_t i = 0, vl; i < size_t(n); i += vl) {
    vl = __riscv_vsetvl_e32m2(size_t(n) - i);
    const vfloat32m2_t v = __riscv_vle32_v_f32m2(g + i, vl);
    const vfloat32m2_t e = ml::rvv::exp_m2(__riscv_vfneg_v_f32m2(v, vl), vl);
    const vfloat32m2_t sig = __riscv_vfrdiv_vf_f32m2(__riscv_vfadd_vf_f32m2(e, 1.0f, vl), 1.0f, vl);
    const vfloat32m2_t gs = __riscv_vfmul_vv_f32m2(v, sig, vl);
    __riscv_vse32_v_f32m2(g + i, __riscv_vfmul_vv_f32m2(gs, __riscv_vle32_v_f32m2(u + i, vl), vl), vl);
  }
}

extern "C" void ml_k_add_rvv(float *y, const float *x, int n) {
  for (size_t i = 0, vl; i < size_t(n); i += vl) {
    vl = __riscv_vsetvl_e32m8(size_t(n) - i);
    __riscv_vse32_v_f32m8(y + i, __riscv_vfadd_vv_f32m8(__riscv_vle32_v_f32m8(y + i, vl), __riscv_vle32_v_f32m8(x + i, vl), vl), vl);
  }
}

extern "C" void ml_k_exp_f32_rvv(float *y, const float *x, int n) {
  for (size_t i = 0, vl; i < size_t(n); i += vl) {
    vl = __riscv_vsetvl_e32m2(size_t(n) - i);
    __riscv_vse32_v_f32m2(y + i, ml::rvv::exp_m2(__riscv_vle32_v_f32m2(x + i, vl), vl), vl);
  }
}
