// matvec_q8 / matvec_q4, neon_dotprod override set (AArch64 ARMv8.2-A + dotprod: the neon_dotprod
// build, and the sve build's fallback).
//   y[r] = sum4 over blocks b of t_b = (float(sumi_b) · dw[r,b]) · dx[b],  r in [r0, r1)
//   sumi_b (exact int32): two vdotq_s32 (sdot: four int8 products summed into each int32 lane);
//   four rows share each x block; the float part is Partials4's canonical order
//   (kernels/arm/neon_common.h). Q4_0: nibbles unpacked in registers, then the same block dot.
//   Layout 1 (16-row panels): vdotq_s32 of each unit slice (4 rows × 4 weights) with the 4
//   activations broadcast: lane = row, no horizontal step (kernels/arm/matvec_neon.h).
// Reads only the rows [r0, r1) of W (layout 1: their panels) and x; writes only y[r0, r1). No
// alignment needed.
// Numerics: bit-identical to kernels/scalar/matvec.cc. Tests: verify/kernel_checks.cc.
#include "kernels/arm/matvec_neon.h"

namespace {

struct DotSdot {
  // Layout 0: lane i sums w·x over bytes 4i..4i+3 of each half.
  static inline int32x4_t block(int8x16_t w0, int8x16_t w1, int8x16_t x0, int8x16_t x1) {
    return vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0, x0), w1, x1);
  }
  // Layout 1: a unit slice is 4 rows × 4 weights; sdot with the 4 activations broadcast gives
  // each row's 4-product sum in its own lane.
  struct X {
    int8x16_t k[8];
  };
  static inline X bcast(const int8_t *x) {
    X r;
    for (int k = 0; k < 8; ++k) r.k[k] = vreinterpretq_s8_s32(vdupq_n_s32(ml::arm::x_group(x + 4 * k)));
    return r;
  }
  template <class U>
  static inline int32x4_t quad(U u, const X &xb) {
    int32x4_t acc = vdupq_n_s32(0);
    for (int k = 0; k < 8; ++k) acc = vdotq_s32(acc, u(k), xb.k[k]);
    return acc;
  }
};

}  // namespace

extern "C" void ml_k_matvec_q8_neon_dotprod(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  ml::arm::matvec_q8<DotSdot>(y, W, x, r0, r1);
}

extern "C" void ml_k_matvec_q4_neon_dotprod(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  ml::arm::matvec_q4<DotSdot>(y, W, x, r0, r1);
}
