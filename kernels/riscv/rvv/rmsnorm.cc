// RMS norm, rvv override set. Reference and contract: kernels/scalar/rmsnorm.cc (o may alias x).
// ss = sum4(x_i · x_i) through the 4-lane accumulator (rvv_common.h), ss/n + eps and 1/sqrt in
// scalar IEEE arithmetic as the reference, then o_i = w_i · (ss · x_i) whole vectors (e32m8):
// bit-identical at every VLEN. Tests: verify/kernel_checks.cc.
#include <cmath>

#include "kernels/kernels.h"
#include "kernels/riscv/rvv/rvv_common.h"

extern "C" void ml_k_rmsnorm_rvv(float *o, const float *x, const float *w, int n, float eps) {
  float ss = ml::rvv::sum4(size_t(n), [&](size_t i, size_t vl) {
    const vfloat32m1_t v = __riscv_vle32_v_f32m1(x + i, vl);
    return __riscv_vfmul_vv_f32m1(v, v, vl);
  });
  ss /= float(n);
  ss += eps;
  ss = 1.0f / std::sqrt(ss);
  for (size_t i = 0, vl; i < size_t(n); i += vl) {
    vl = __riscv_vsetvl_e32m8(size_t(n) - i);
    const vfloat32m8_t t = __riscv_vfmul_vf_f32m8(__riscv_vle32_v_f32m8(x + i, vl), ss, vl);
    __riscv_vse32_v_f32m8(o + i, __riscv_vfmul_vv_f32m8(__riscv_vle32_v_f32m8(w + i, vl), t, vl), vl);
  }
}
