// matvec_q8/q4, matmul_q8/q4 of the neon_dotprod set (AArch64 ARMv8.2-A + dotprod: the
// neon_dotprod build; the sve build's fallback). The block dot is vdotq_s32 (sdot: four int8
// products summed into each int32 lane, exact). Loops, float order, contract:
// kernels/arm/matvec_neon.h.
// Defines: ml_k_matvec_q8_neon_dotprod ml_k_matvec_q4_neon_dotprod ml_k_matmul_q8_neon_dotprod ml_k_matmul_q4_neon_dotprod ml_k_peak_neon_dotprod
#include "kernels/arm/matvec_neon.h"

namespace {

struct DotSdot {
  // Layout 0: lane i sums w·x over bytes 4i..4i+3 of each half.
  static int32x4_t block(int8x16_t w0, int8x16_t w1, int8x16_t x0, int8x16_t x1) {
    return vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0, x0), w1, x1);
  }
  // Layout 1 (QuadSums): a slice is 4 rows × 4 weights; sdot with the 4 activations broadcast:
  // lane = row.
  using Acc = int32x4_t;
  static Acc zero() { return vdupq_n_s32(0); }
  static Acc step(Acc a, int8x16_t w, int32_t xg) { return vdotq_s32(a, w, vreinterpretq_s8_s32(vdupq_n_s32(xg))); }
  static int32x4_t finish(Acc a) { return a; }
};

}  // namespace

ML_PANEL_KERNELS(neon_dotprod, ml::arm::Width, ml::arm::PanelInt<ml::arm::QuadSums<DotSdot>>,
                 ml::arm::rows_q8<ml::arm::BlockTile<DotSdot>>, ml::arm::rows_q4<ml::arm::BlockTile<DotSdot>>)
