// matvec_q8 / matvec_q4, sve override set (AArch64 SVE, vector-length agnostic: any VL from 128 to
// 2048 bits, tested at 128, 256 and 512).
//   y[r] = sum4 over blocks b of t_b = (float(sumi_b) · dw[r,b]) · dx[b],  r in [r0, r1)
//   sumi_b (exact int32), layout 0: svdot_s32 over a chunk of 8 vectors (8·VL bits = VL/32
//   blocks) gives int32 lanes of 4 products each; a block is 8 consecutive lanes of the chunk,
//   summed by three rounds of pairwise adds (svuzp1 + svuzp2: lane i of the result = lanes 2i and
//   2i+1 of a‖b), so one vector holds VL/32 consecutive block sums whatever VL is. Four rows share
//   each x chunk; their block sums are stored block-major (svst4) into a tile buffer.
//   Layout 1 (16-row panels): a 64-byte unit is 4 weights of 16 rows, so svdot of a unit with the
//   4 activations broadcast (svdup) puts row i's 4-product sum in lane i: min(VL/32, 16) rows per
//   svdot, 8 units per block (Q4: 4 units, low and high nibbles), no horizontal step.
//   The float part is Partials4's canonical order on 128-bit NEON vectors (kernels/arm/
//   neon_common.h): fixed 4 lanes, so the bits cannot depend on VL. Predicated loads never touch
//   bytes past a row's (or panel's) last block.
//   Q4_0, layout 0: each group's rows are unpacked ((q & 0x0F) − 8, (q >> 4) − 8) tile by tile
//   into int8 scratch, then go through the Q8 path.
// Reads only the rows [r0, r1) of W (layout 1: their panels) and x; writes only y[r0, r1). No
// alignment needed.
// Numerics: bit-identical to kernels/scalar/matvec.cc at every vector length.
// Tests: verify/kernel_checks.cc, run at 512-, 256- and 128-bit VL (cmake/tests/arm.cmake).
#include <arm_sve.h>

#include "kernels/arm/matvec_neon.h"  // x_group
#include "kernels/arm/neon_common.h"
#include "kernels/kernels.h"

namespace {

using ml::arm::Partials4;

constexpr int kTile = 64;  // layout 0: blocks per tile, 2 KB of int8 per row (a whole number of chunks at any VL)

// Lane i = c[2i] + c[2i+1] of the concatenation c = a‖b.
inline svint32_t pair_sums(svint32_t a, svint32_t b) {
  return svadd_s32_x(svptrue_b32(), svuzp1_s32(a, b), svuzp2_s32(a, b));
}

// The block sums of 8 consecutive vectors of svdot lanes (8 lanes = 32 bytes = one block).
inline svint32_t block_sums(svint32_t d0, svint32_t d1, svint32_t d2, svint32_t d3, svint32_t d4, svint32_t d5,
                            svint32_t d6, svint32_t d7) {
  return pair_sums(pair_sums(pair_sums(d0, d1), pair_sums(d2, d3)), pair_sums(pair_sums(d4, d5), pair_sums(d6, d7)));
}

// One row's block sums for the chunk at w (x already loaded, predicates p0..p7).
inline svint32_t row_chunk(const int8_t *w, svbool_t p0, svbool_t p1, svbool_t p2, svbool_t p3, svbool_t p4,
                           svbool_t p5, svbool_t p6, svbool_t p7, svint8_t x0, svint8_t x1, svint8_t x2, svint8_t x3,
                           svint8_t x4, svint8_t x5, svint8_t x6, svint8_t x7) {
  const size_t vb = svcntb();
  const svint32_t z = svdup_n_s32(0);
  return block_sums(svdot_s32(z, svld1_s8(p0, w), x0), svdot_s32(z, svld1_s8(p1, w + vb), x1),
                    svdot_s32(z, svld1_s8(p2, w + 2 * vb), x2), svdot_s32(z, svld1_s8(p3, w + 3 * vb), x3),
                    svdot_s32(z, svld1_s8(p4, w + 4 * vb), x4), svdot_s32(z, svld1_s8(p5, w + 5 * vb), x5),
                    svdot_s32(z, svld1_s8(p6, w + 6 * vb), x6), svdot_s32(z, svld1_s8(p7, w + 7 * vb), x7));
}

// Layout 0: sums[j][i] = exact int32 dot of block j of row w[i] (int8, tile-relative) with block j
// of x, for the tile's nblk blocks.
void tile_sums(int32_t (*sums)[4], const int8_t *const w[4], const int8_t *x, int nblk) {
  const uint64_t nbytes = uint64_t(nblk) * ML_QK, vb = svcntb(), chunk = 8 * vb;
  for (uint64_t o = 0; o < nbytes; o += chunk) {
    const svbool_t p0 = svwhilelt_b8_u64(o, nbytes), p1 = svwhilelt_b8_u64(o + vb, nbytes),
                   p2 = svwhilelt_b8_u64(o + 2 * vb, nbytes), p3 = svwhilelt_b8_u64(o + 3 * vb, nbytes),
                   p4 = svwhilelt_b8_u64(o + 4 * vb, nbytes), p5 = svwhilelt_b8_u64(o + 5 * vb, nbytes),
                   p6 = svwhilelt_b8_u64(o + 6 * vb, nbytes), p7 = svwhilelt_b8_u64(o + 7 * vb, nbytes);
    const svint8_t x0 = svld1_s8(p0, x + o), x1 = svld1_s8(p1, x + o + vb), x2 = svld1_s8(p2, x + o + 2 * vb),
                   x3 = svld1_s8(p3, x + o + 3 * vb), x4 = svld1_s8(p4, x + o + 4 * vb),
                   x5 = svld1_s8(p5, x + o + 5 * vb), x6 = svld1_s8(p6, x + o + 6 * vb),
                   x7 = svld1_s8(p7, x + o + 7 * vb);
    const svint32_t s0 = row_chunk(w[0] + o, p0, p1, p2, p3, p4, p5, p6, p7, x0, x1, x2, x3, x4, x5, x6, x7);
    const svint32_t s1 = row_chunk(w[1] + o, p0, p1, p2, p3, p4, p5, p6, p7, x0, x1, x2, x3, x4, x5, x6, x7);
    const svint32_t s2 = row_chunk(w[2] + o, p0, p1, p2, p3, p4, p5, p6, p7, x0, x1, x2, x3, x4, x5, x6, x7);
    const svint32_t s3 = row_chunk(w[3] + o, p0, p1, p2, p3, p4, p5, p6, p7, x0, x1, x2, x3, x4, x5, x6, x7);
    const uint64_t b = o / ML_QK;  // first block of the chunk
    svst4_s32(svwhilelt_b32_u64(b, uint64_t(nblk)), &sums[b][0], svcreate4_s32(s0, s1, s2, s3));
  }
}

// Layout 0: rows [r0, r1) four at a time, tiles of kTile blocks. Q4 rows are unpacked per tile.
template <bool Q4>
void matvec_rows(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  const int K = W->cols, nb = K / ML_QK;
  const size_t row_bytes = Q4 ? size_t(K) / 2 : size_t(K);
  const uint8_t *q = static_cast<const uint8_t *>(W->q);
  ml::arm::for_row_groups(r0, r1, [&](int r, const int rows[4]) {
    const float *dw[4];
    for (int i = 0; i < 4; ++i) dw[i] = W->d + size_t(rows[i]) * nb;
    Partials4 acc;
    int32_t sums[kTile][4];
    int8_t unpacked[Q4 ? 4 : 1][Q4 ? kTile * ML_QK : 1];
    for (int b0 = 0; b0 < nb; b0 += kTile) {
      const int nblk = nb - b0 < kTile ? nb - b0 : kTile;
      const int8_t *w[4];
      for (int i = 0; i < 4; ++i) {
        const uint8_t *src = q + size_t(rows[i]) * row_bytes + size_t(b0) * (Q4 ? ML_QK / 2 : ML_QK);
        if constexpr (Q4) {
          for (int j = 0; j < nblk; ++j) {
            const uint8x16_t v = vld1q_u8(src + size_t(j) * (ML_QK / 2));
            vst1q_s8(unpacked[i] + j * ML_QK, ml::arm::q4_lo(v));
            vst1q_s8(unpacked[i] + j * ML_QK + 16, ml::arm::q4_hi(v));
          }
          w[i] = unpacked[i];
        } else {
          w[i] = reinterpret_cast<const int8_t *>(src);
        }
      }
      tile_sums(sums, w, x->q + size_t(b0) * ML_QK, nblk);
      ml::arm::for_blocks4(b0, b0 + nblk, [&](int j, int b) {
        acc.add(j, vld1q_s32(sums[b - b0]), ml::arm::gather_dw(dw, b), vld1q_dup_f32(x->d + b));
      });
    }
    ml::arm::store_rows(y, r, acc.total(), r0, r1);
  });
}

// The 4 activations of group k broadcast to every int32 lane.
inline svint8_t x_bcast(const int8_t *x, int k) { return svreinterpret_s8_s32(svdup_n_s32(ml::arm::x_group(x + 4 * k))); }

// Layout 1: s[i] = exact block sum of row i of the panel block whose units start at `units`.
template <bool Q4>
inline void panel_block_sums(int32_t s[ML_PANEL_ROWS], const uint8_t *units, const int8_t *x) {
  const uint64_t lanes = svcntw();
  for (uint64_t rc = 0; rc < ML_PANEL_ROWS; rc += lanes) {  // rows rc.. in lanes 0..
    const svbool_t pb = svwhilelt_b8_u64(4 * rc, 4 * ML_PANEL_ROWS);
    svint32_t acc = svdup_n_s32(0);
    if constexpr (Q4) {
      for (int k = 0; k < 4; ++k) {
        const svuint8_t v = svld1_u8(pb, units + 64 * k + 4 * rc);
        const svint8_t lo = svsub_n_s8_x(pb, svreinterpret_s8_u8(svand_n_u8_x(pb, v, 0x0F)), 8);
        const svint8_t hi = svsub_n_s8_x(pb, svreinterpret_s8_u8(svlsr_n_u8_x(pb, v, 4)), 8);
        acc = svdot_s32(svdot_s32(acc, lo, x_bcast(x, k)), hi, x_bcast(x, k + 4));
      }
    } else {
      for (int k = 0; k < 8; ++k)
        acc = svdot_s32(acc, svld1_s8(pb, reinterpret_cast<const int8_t *>(units) + 64 * k + 4 * rc), x_bcast(x, k));
    }
    svst1_s32(svwhilelt_b32_u64(rc, ML_PANEL_ROWS), s + rc, acc);
  }
}

template <bool Q4>
void matvec_panels(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  const int nb = W->cols / ML_QK;
  constexpr size_t kBlockBytes = (Q4 ? 4 : 8) * 64;  // units of one panel block
  const uint8_t *q = static_cast<const uint8_t *>(W->q);
  for (int p = r0 / ML_PANEL_ROWS; p * ML_PANEL_ROWS < r1; ++p) {
    Partials4 acc[4];
    ml::arm::for_blocks4(0, nb, [&](int j, int b) {
      const size_t pb = size_t(p) * nb + size_t(b);
      int32_t s[ML_PANEL_ROWS];
      panel_block_sums<Q4>(s, q + pb * kBlockBytes, x->q + size_t(b) * ML_QK);
      const float *d = W->d + pb * ML_PANEL_ROWS;
      const float32x4_t dx = vld1q_dup_f32(x->d + b);
      for (int g = 0; g < 4; ++g) acc[g].add(j, vld1q_s32(s + 4 * g), vld1q_f32(d + 4 * g), dx);
    });
    for (int g = 0; g < 4; ++g) ml::arm::store_rows(y, p * ML_PANEL_ROWS + 4 * g, acc[g].total(), r0, r1);
  }
}

}  // namespace

extern "C" void ml_k_matvec_q8_sve(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  if (W->layout == ML_LAYOUT_PANEL16) return matvec_panels<false>(y, W, x, r0, r1);
  matvec_rows<false>(y, W, x, r0, r1);
}

extern "C" void ml_k_matvec_q4_sve(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  if (W->layout == ML_LAYOUT_PANEL16) return matvec_panels<true>(y, W, x, r0, r1);
  matvec_rows<true>(y, W, x, r0, r1);
}
