// matvec_q8 / matvec_q4, neon_dotprod override set (AArch64 ARMv8.2-A + dotprod: the neon_dotprod
// build, and the sve build's fallback).
//   y[r] = sum4 over blocks b of t_b = (float(sumi_b) · dw[r,b]) · dx[b],  r in [r0, r1)
//   sumi_b (exact int32): two vdotq_s32 (sdot: four int8 products summed into each int32 lane);
//   four rows share each x block; the float part is Rows4's canonical order
//   (kernels/arm/neon_common.h). Q4_0: nibbles unpacked in registers, then the same block dot.
// Reads only the rows [r0, r1) of W, x, and writes only y[r0, r1). No alignment needed.
// Numerics: bit-identical to kernels/scalar/matvec.cc. Tests: verify/kernel_checks.cc.
#include "kernels/arm/matvec_neon.h"

namespace {

struct DotSdot {
  static inline int32x4_t block(int8x16_t w0, int8x16_t w1, int8x16_t x0, int8x16_t x1) {
    return vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0, x0), w1, x1);
  }
};

}  // namespace

extern "C" void ml_k_matvec_q8_neon_dotprod(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  ml::arm::matvec_q8<DotSdot>(y, W, x, r0, r1);
}

extern "C" void ml_k_matvec_q4_neon_dotprod(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  ml::arm::matvec_q4<DotSdot>(y, W, x, r0, r1);
}
