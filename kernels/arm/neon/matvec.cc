// matvec_q8/q4, matmul_q8/q4 of the neon set: ARMv7 NEON (neon_v7 build) and AArch64 Advanced
// SIMD (neon build; the neon_dotprod and sve builds' fallback), one source. The block dot:
// vmull_s8 multiplies 8 int8 pairs into int16 (|product| <= 2^14, even for -128), vpadalq_s16
// adds adjacent pairs into int32 lanes: exact. Loops, float order, contract and numerics
// (ARMv7 denormals): kernels/arm/matvec_neon.h.
// Defines: ml_k_matvec_q8_neon ml_k_matvec_q4_neon ml_k_matmul_q8_neon ml_k_matmul_q4_neon ml_k_peak_neon
#include "kernels/arm/matvec_neon.h"

namespace {

struct DotNeon {
  // Layout 0: one row's block.
  static int32x4_t block(int8x16_t w0, int8x16_t w1, int8x16_t x0, int8x16_t x1) {
    int32x4_t acc = vpaddlq_s16(vmull_s8(vget_low_s8(w0), vget_low_s8(x0)));
    acc = vpadalq_s16(acc, vmull_s8(vget_high_s8(w0), vget_high_s8(x0)));
    acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(w1), vget_low_s8(x1)));
    return vpadalq_s16(acc, vmull_s8(vget_high_s8(w1), vget_high_s8(x1)));
  }
  // Layout 1 (QuadSums): a slice's low half is rows 0, 1 and its high half rows 2, 3 (× 4 weights
  // each); vmull_s8 with the 4 activations twice, vpadalq_s16 to 2 lanes per row, padd to one.
  struct Acc {
    int32x4_t lo, hi;
  };
  static Acc zero() { return {vdupq_n_s32(0), vdupq_n_s32(0)}; }
  static Acc step(Acc a, int8x16_t w, int32_t xg) {
    const int8x8_t xk = vreinterpret_s8_s32(vdup_n_s32(xg));
    return {vpadalq_s16(a.lo, vmull_s8(vget_low_s8(w), xk)), vpadalq_s16(a.hi, vmull_s8(vget_high_s8(w), xk))};
  }
  static int32x4_t finish(const Acc &a) { return ml::arm::padd(a.lo, a.hi); }
};

}  // namespace

ML_PANEL_KERNELS(neon, ml::arm::Width, ml::arm::PanelInt<ml::arm::QuadSums<DotNeon>>,
                 ml::arm::rows_q8<ml::arm::BlockTile<DotNeon>>, ml::arm::rows_q4<ml::arm::BlockTile<DotNeon>>)
