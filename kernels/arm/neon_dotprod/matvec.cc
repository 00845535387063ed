// matvec_q8/q4, matmul_q8/q4 of the neon_dotprod set (AArch64 ARMv8.2-A + dotprod: the
// neon_dotprod build; the sve build's fallback). The block dot is vdotq_s32 (sdot: four int8
// products summed into each int32 lane, exact). Loops, float order, contract:
// kernels/arm/matvec_neon.h.
#include "kernels/arm/matvec_neon.h"

namespace {

struct DotSdot {
  // Layout 0: lane i sums w·x over bytes 4i..4i+3 of each half.
  static int32x4_t block(int8x16_t w0, int8x16_t w1, int8x16_t x0, int8x16_t x1) {
    return vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0, x0), w1, x1);
  }
  // Layout 1: a slice is 4 rows × 4 weights; sdot with the 4 activations broadcast: lane = row.
  template <class U>
  static int32x4_t quad(U u, const ml::arm::XGroups &x) {
    int32x4_t acc = vdupq_n_s32(0);
    for (int k = 0; k < 8; ++k) acc = vdotq_s32(acc, u(k), vreinterpretq_s8_s32(vdupq_n_s32(x.g[k])));
    return acc;
  }
};

}  // namespace

ML_PANEL_KERNELS(neon_dotprod, ml::arm::Width, ml::arm::PanelInt<ml::arm::QuadSums<DotSdot>>,
                 ml::arm::rows_q8<ml::arm::BlockTile<DotSdot>>, ml::arm::rows_q4<ml::arm::BlockTile<DotSdot>>)
