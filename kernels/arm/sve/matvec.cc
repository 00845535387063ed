// matvec_q8/q4, matmul_q8/q4 of the sve set (AArch64 SVE, vector-length agnostic: any VL from 128
// to 2048 bits; tested at 128, 256 and 512). Block dots are svdot_s32 (four int8 products per
// int32 lane, exact); SVE types are sizeless, so block sums leave through memory as int32 and the
// float part is matvec_neon.h's on fixed 128-bit NEON vectors: the bits never depend on VL.
//   Layout 0: svdot over a chunk of 8 vectors (8·VL bits = VL/32 blocks), then three rounds of
//   pairwise adds (svuzp1 + svuzp2: lane i = lanes 2i and 2i+1 of a‖b) leave one vector of VL/32
//   consecutive block sums; four rows share each x chunk and are stored block-major (svst4).
//   Layout 1: svdot of a 64-byte unit (4 weights of 16 rows) with the 4 activations broadcast
//   puts row i's sum in lane i: min(VL/32, 16) rows per svdot, no horizontal step.
// Predicated loads never touch bytes past a row's (or panel's) last block. Loops, float order,
// contract: kernels/arm/matvec_neon.h.
// Defines: ml_k_matvec_q8_sve ml_k_matvec_q4_sve ml_k_matmul_q8_sve ml_k_matmul_q4_sve ml_k_peak_sve
#include <arm_sve.h>

#include "kernels/arm/matvec_neon.h"

namespace {

// Lane i = c[2i] + c[2i+1] of the concatenation c = a‖b.
inline svint32_t pair_sums(svint32_t a, svint32_t b) {
  return svadd_s32_x(svptrue_b32(), svuzp1_s32(a, b), svuzp2_s32(a, b));
}

// The four rows' block sums of the N vectors of bytes [o, o + N·VL/8) (N = 8: VL/32 blocks).
template <int N>
svint32x4_t chunk_sums(const int8_t *const w[4], const int8_t *x, uint64_t o, uint64_t n) {
  if constexpr (N == 1) {
    const svbool_t p = svwhilelt_b8_u64(o, n);
    const svint8_t xv = svld1_s8(p, x + o);
    const svint32_t z = svdup_n_s32(0);
    return svcreate4_s32(svdot_s32(z, svld1_s8(p, w[0] + o), xv), svdot_s32(z, svld1_s8(p, w[1] + o), xv),
                         svdot_s32(z, svld1_s8(p, w[2] + o), xv), svdot_s32(z, svld1_s8(p, w[3] + o), xv));
  } else {
    const svint32x4_t a = chunk_sums<N / 2>(w, x, o, n), b = chunk_sums<N / 2>(w, x, o + N / 2 * svcntb(), n);
    return svcreate4_s32(pair_sums(svget4_s32(a, 0), svget4_s32(b, 0)), pair_sums(svget4_s32(a, 1), svget4_s32(b, 1)),
                         pair_sums(svget4_s32(a, 2), svget4_s32(b, 2)), pair_sums(svget4_s32(a, 3), svget4_s32(b, 3)));
  }
}

struct SveTile {  // layout 0 (matvec_neon.h's Tile)
  static void sums(int32_t (*s)[4], const int8_t *const w[4], const int8_t *x, int nblk) {
    const uint64_t n = uint64_t(nblk) * ML_QK;
    for (uint64_t o = 0; o < n; o += 8 * svcntb())
      svst4_s32(svwhilelt_b32_u64(o / ML_QK, uint64_t(nblk)), &s[o / ML_QK][0], chunk_sums<8>(w, x, o, n));
  }
};

struct SveSums16 {  // layout 1 (matvec_neon.h's Sums16): rows rc.. in lanes 0.., Q4 unit k & 3
  template <bool Q4>
  static ml::arm::Width::Sums sums(const uint8_t *units, const ml::arm::XGroups &x) {
    int32_t s[ML_PANEL_ROWS];
    for (uint64_t rc = 0; rc < ML_PANEL_ROWS; rc += svcntw()) {
      const svbool_t pb = svwhilelt_b8_u64(4 * rc, 4 * ML_PANEL_ROWS);
      svint32_t acc = svdup_n_s32(0);
      for (int k = 0; k < 8; ++k) {
        const svint8_t xk = svreinterpret_s8_s32(svdup_n_s32(x.g[k]));
        if constexpr (Q4) {
          const svuint8_t v = svld1_u8(pb, units + 64 * (k & 3) + 4 * rc);
          const svuint8_t nib = k < 4 ? svand_n_u8_x(pb, v, 0x0F) : svlsr_n_u8_x(pb, v, 4);
          acc = svdot_s32(acc, svsub_n_s8_x(pb, svreinterpret_s8_u8(nib), 8), xk);
        } else {
          acc = svdot_s32(acc, svld1_s8(pb, reinterpret_cast<const int8_t *>(units) + 64 * k + 4 * rc), xk);
        }
      }
      svst1_s32(svwhilelt_b32_u64(rc, ML_PANEL_ROWS), s + rc, acc);
    }
    return {{vld1q_s32(s), vld1q_s32(s + 4), vld1q_s32(s + 8), vld1q_s32(s + 12)}};
  }
};

}  // namespace

ML_PANEL_KERNELS(sve, ml::arm::Width, ml::arm::PanelInt<SveSums16>, ml::arm::rows_q8<SveTile>,
                 ml::arm::rows_q4<SveTile>)
