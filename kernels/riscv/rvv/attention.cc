// Attention vector kernels, rvv override set. References: kernels/scalar/attention.cc.
//   dot_f32:  sum4(a_i · b_i): products 4 at a time into the 4-lane accumulator (rvv_common.h
//             Sum4), the canonical order of kernels/kernels.h — bit-identical at every VLEN
//   axpy_f32: y_i += a · x_i, vfmul then vfadd (no FMA), whole vectors (e32m8, vl from vsetvl)
// Reads and writes only [0, n); no alignment needed. Tests: verify/kernel_checks.cc.
#include "kernels/kernels.h"
#include "kernels/riscv/rvv/rvv_common.h"

extern "C" float ml_k_dot_f32_rvv(const float *a, const float *b, int n) {
  return ml::rvv::sum4(size_t(n), [&](size_t i, size_t vl) {
    return __riscv_vfmul_vv_f32m1(__riscv_vle32_v_f32m1(a + i, vl), __riscv_vle32_v_f32m1(b + i, vl), vl);
  });
}

extern "C" void ml_k_axpy_f32_rvv(float *y, float a, const float *x, int n) {
  for (size_t i = 0, vl; i < size_t(n); i += vl) {
    vl = __riscv_vsetvl_e32m8(size_t(n) - i);
    const vfloat32m8_t ax = __riscv_vfmul_vf_f32m8(__riscv_vle32_v_f32m8(x + i, vl), a, vl);
    __riscv_vse32_v_f32m8(y + i, __riscv_vfadd_vv_f32m8(__riscv_vle32_v_f32m8(y + i, vl), ax, vl), vl);
  }
}
