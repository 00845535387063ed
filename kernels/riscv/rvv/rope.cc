// Rotary position embedding, rvv override set. Reference: kernels/scalar/rope.cc (interleaved
// pairs). A segment load (vlseg2e32) splits each head into its even (v0) and odd (v1) elements;
// v[2i] = v0·c − v1·s and v[2i+1] = v0·s + v1·c with separate roundings (no FMA), stored back
// interleaved (vsseg2e32): bit-identical at every VLEN. Tests: verify/kernel_checks.cc.
#include "kernels/kernels.h"
#include "kernels/riscv/rvv/rvv_common.h"

namespace {
void rotate(float *v, const float *cos_t, const float *sin_t, int head_dim, int n) {
  const size_t pairs = size_t(head_dim) / 2;
  for (int h = 0; h < n; ++h, v += head_dim)
    for (size_t i = 0, vl; i < pairs; i += vl) {
      vl = __riscv_vsetvl_e32m2(pairs - i);
      vfloat32m2_t v0, v1;
      __riscv_vlseg2e32_v_f32m2(&v0, &v1, v + 2 * i, vl);
      const vfloat32m2_t c = __riscv_vle32_v_f32m2(cos_t + i, vl), s = __riscv_vle32_v_f32m2(sin_t + i, vl);
      const vfloat32m2_t o0 = __riscv_vfsub_vv_f32m2(__riscv_vfmul_vv_f32m2(v0, c, vl), __riscv_vfmul_vv_f32m2(v1, s, vl), vl);
      const vfloat32m2_t o1 = __riscv_vfadd_vv_f32m2(__riscv_vfmul_vv_f32m2(v0, s, vl), __riscv_vfmul_vv_f32m2(v1, c, vl), vl);
      __riscv_vsseg2e32_v_f32m2(v + 2 * i, o0, o1, vl);
    }
}
}  // namespace

extern "C" void ml_k_rope_rvv(float *q, float *k, const float *cos_t, const float *sin_t, int head_dim, int n_heads,
                              int n_kv_heads) {
  rotate(q, cos_t, sin_t, head_dim, n_heads);
  rotate(k, cos_t, sin_t, head_dim, n_kv_heads);
}
