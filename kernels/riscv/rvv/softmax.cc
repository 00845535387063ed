// Softmax in place, rvv override set. Reference: kernels/scalar/softmax.cc.
//   m = max x (vfredmax: the maximum does not depend on the order); e_i = exp(x_i − m) with the
//   RVV port of simd/exp.h (rvv_common.h exp_m2, exp_scalar's bits); s = sum4(e) through the
//   4-lane accumulator; x_i = e_i / s with vfdiv (IEEE). Bit-identical at every VLEN.
// Tests: verify/kernel_checks.cc.
#include "kernels/kernels.h"
#include "kernels/riscv/rvv/rvv_common.h"

extern "C" void ml_k_softmax_rvv(float *x, int n) {
  const size_t len = size_t(n);
  vfloat32m1_t m = __riscv_vfmv_s_f_f32m1(x[0], 1);
  for (size_t i = 0, vl; i < len; i += vl) {
    vl = __riscv_vsetvl_e32m8(len - i);
    m = __riscv_vfredmax_vs_f32m8_f32m1(__riscv_vle32_v_f32m8(x + i, vl), m, vl);
  }
  const float max_val = __riscv_vfmv_f_s_f32m1_f32(m);
  for (size_t i = 0, vl; i < len; i += vl) {
    vl = __riscv_vsetvl_e32m2(len - i);
    const vfloat32m2_t v = __riscv_vfsub_vf_f32m2(__riscv_vle32_v_f32m2(x + i, vl), max_val, vl);
    __riscv_vse32_v_f32m2(x + i, ml::rvv::exp_m2(v, vl), vl);
  }
  const float s = ml::rvv::sum4(len, [&](size_t i, size_t vl) { return __riscv_vle32_v_f32m1(x + i, vl); });
  for (size_t i = 0, vl; i < len; i += vl) {
    vl = __riscv_vsetvl_e32m8(len - i);
    __riscv_vse32_v_f32m8(x + i, __riscv_vfdiv_vf_f32m8(__riscv_vle32_v_f32m8(x + i, vl), s, vl), vl);
  }
}
