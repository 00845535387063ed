// matvec_q8 / matvec_q4, neon override set: ARMv7 NEON (neon_v7 build) and AArch64 Advanced SIMD
// (neon build, and the neon_dotprod / sve builds' fallback), one source.
//   y[r] = sum4 over blocks b of t_b = (float(sumi_b) · dw[r,b]) · dx[b],  r in [r0, r1)
//   sumi_b (exact int32): vmull_s8 multiplies 8 int8 pairs into int16 (|product| <= 2^14, no
//   overflow even for -128), vpadalq_s16 adds adjacent pairs into the int32 accumulator; four rows
//   share each x block; the float part is Partials4's canonical order (kernels/arm/neon_common.h).
//   Q4_0: nibbles unpacked ((q & 0x0F) − 8, (q >> 4) − 8) in registers, then the same block dot.
//   Layout 1 (16-row panels): vmull_s8 of each unit slice (2 rows × 4 weights per half) with the
//   4 broadcast activations, so the lanes are rows (kernels/arm/matvec_neon.h).
// Reads only the rows [r0, r1) of W (layout 1: their panels) and x; writes only y[r0, r1). No
// alignment needed.
// Numerics: bit-identical to kernels/scalar/matvec.cc (AArch64 always; ARMv7 unless a t_b or
// partial sum is a denormal, see neon_common.h). Tests: verify/kernel_checks.cc (every build of
// the ARM presets runs them, the neon_dotprod and sve builds too).
#include "kernels/arm/matvec_neon.h"

namespace {

struct DotNeon {
  // Layout 0: one row's block; vmull_s8 → 8 int16 products, vpadalq_s16 adds pairs into int32.
  static inline int32x4_t block(int8x16_t w0, int8x16_t w1, int8x16_t x0, int8x16_t x1) {
    int32x4_t acc = vpaddlq_s16(vmull_s8(vget_low_s8(w0), vget_low_s8(x0)));
    acc = vpadalq_s16(acc, vmull_s8(vget_high_s8(w0), vget_high_s8(x0)));
    acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(w1), vget_low_s8(x1)));
    return vpadalq_s16(acc, vmull_s8(vget_high_s8(w1), vget_high_s8(x1)));
  }
  // Layout 1: a unit slice is rows 0,1 (low half) and 2,3 (high half) × 4 weights; vmull_s8 with
  // the 4 activations twice gives each row's 4 products, vpadalq_s16 sums them to 2 lanes per row,
  // padd to one.
  struct X {
    int8x8_t k[8];
  };
  static inline X bcast(const int8_t *x) {
    X r;
    for (int k = 0; k < 8; ++k) r.k[k] = vreinterpret_s8_s32(vdup_n_s32(ml::arm::x_group(x + 4 * k)));
    return r;
  }
  template <class U>
  static inline int32x4_t quad(U u, const X &xb) {
    int32x4_t lo = vdupq_n_s32(0), hi = vdupq_n_s32(0);
    for (int k = 0; k < 8; ++k) {
      const int8x16_t w = u(k);
      lo = vpadalq_s16(lo, vmull_s8(vget_low_s8(w), xb.k[k]));
      hi = vpadalq_s16(hi, vmull_s8(vget_high_s8(w), xb.k[k]));
    }
    return ml::arm::padd(lo, hi);
  }
};

}  // namespace

extern "C" void ml_k_matvec_q8_neon(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  ml::arm::matvec_q8<DotNeon>(y, W, x, r0, r1);
}

extern "C" void ml_k_matvec_q4_neon(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  ml::arm::matvec_q4<DotNeon>(y, W, x, r0, r1);
}
