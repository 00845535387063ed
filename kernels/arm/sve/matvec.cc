// matvec_q8 / matvec_q4, sve override set (AArch64 SVE, vector-length agnostic: any VL from 128 to
// 2048 bits, tested at 128, 256 and 512).
//   y[r] = sum4 over blocks b of t_b = (float(sumi_b) · dw[r,b]) · dx[b],  r in [r0, r1)
//   sumi_b (exact int32): svdot_s32 over a chunk of 8 vectors (8·VL bits = VL/32 blocks) gives
//   int32 lanes of 4 products each; a block is 8 consecutive lanes of the chunk, summed by three
//   rounds of pairwise adds (svuzp1 + svuzp2: lane i of the result = lanes 2i + 2i+1 of a‖b), so
//   one vector holds VL/32 consecutive block sums whatever VL is. Four rows share each x chunk;
//   their block sums are stored block-major (svst4) into a tile buffer, and the float part is
//   Rows4's canonical order on 128-bit NEON vectors (kernels/arm/neon_common.h): fixed 4 lanes, so
//   the bits cannot depend on VL. Predicated loads never touch bytes past a row's last block.
//   Q4_0: each group's rows are unpacked ((q & 0x0F) − 8, (q >> 4) − 8) tile by tile into int8
//   scratch, then go through the Q8 path.
// Reads only the rows [r0, r1) of W, x, and writes only y[r0, r1). No alignment needed.
// Numerics: bit-identical to kernels/scalar/matvec.cc at every vector length.
// Tests: verify/kernel_checks.cc, run at 512-, 256- and 128-bit VL (cmake/tests/arm.cmake).
#include <arm_sve.h>

#include "kernels/arm/neon_common.h"
#include "kernels/kernels.h"

namespace {

using ml::arm::Rows4;

constexpr int kTile = 64;  // blocks per tile: 2 KB of int8 per row, a multiple of every VL's chunk

// Lane i = c[2i] + c[2i+1] of the concatenation c = a‖b.
inline svint32_t pair_sums(svint32_t a, svint32_t b) {
  return svadd_s32_x(svptrue_b32(), svuzp1_s32(a, b), svuzp2_s32(a, b));
}

// The block sums of 8 consecutive vectors of svdot lanes (8 lanes = 32 bytes = one block).
inline svint32_t block_sums(svint32_t d0, svint32_t d1, svint32_t d2, svint32_t d3, svint32_t d4, svint32_t d5,
                            svint32_t d6, svint32_t d7) {
  return pair_sums(pair_sums(pair_sums(d0, d1), pair_sums(d2, d3)), pair_sums(pair_sums(d4, d5), pair_sums(d6, d7)));
}

// One row's block sums for the chunk at byte offset o (x already loaded, predicates p0..p7).
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

// sums[j][i] = exact int32 dot of block j of row w[i] (int8, tile-relative) with block j of x,
// for the tile's nblk blocks.
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

// The canonical float part over one tile of blocks [b0, b0 + nblk).
inline void add_tile(Rows4 &acc, int32_t (*sums)[4], int b0, int nblk) {
  acc.blocks(b0, b0 + nblk, [&](int b) { return vld1q_s32(sums[b - b0]); });
}

}  // namespace

extern "C" void ml_k_matvec_q8_sve(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  const int K = W->cols, nb = K / ML_QK;
  const int8_t *q = static_cast<const int8_t *>(W->q);
  ml::arm::for_row_groups(r0, r1, [&](int r, int R, const int rows[4]) {
    const float *dw[4];
    for (int i = 0; i < 4; ++i) dw[i] = W->d + size_t(rows[i]) * nb;
    Rows4 acc(dw, x->d);
    int32_t sums[kTile][4];
    for (int b0 = 0; b0 < nb; b0 += kTile) {
      const int nblk = nb - b0 < kTile ? nb - b0 : kTile;
      const int8_t *w[4];
      for (int i = 0; i < 4; ++i) w[i] = q + size_t(rows[i]) * K + size_t(b0) * ML_QK;
      tile_sums(sums, w, x->q + size_t(b0) * ML_QK, nblk);
      add_tile(acc, sums, b0, nblk);
    }
    acc.store(y + r, R);
  });
}

extern "C" void ml_k_matvec_q4_sve(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  const int nb = W->cols / ML_QK;
  const size_t row_bytes = size_t(nb) * (ML_QK / 2);
  const uint8_t *q = static_cast<const uint8_t *>(W->q);
  ml::arm::for_row_groups(r0, r1, [&](int r, int R, const int rows[4]) {
    const float *dw[4];
    for (int i = 0; i < 4; ++i) dw[i] = W->d + size_t(rows[i]) * nb;
    Rows4 acc(dw, x->d);
    int32_t sums[kTile][4];
    int8_t unpacked[4][kTile * ML_QK];  // the group's distinct rows (R of them), one tile
    const int8_t *w[4];
    for (int i = 0; i < 4; ++i) w[i] = unpacked[i < R ? i : R - 1];
    for (int b0 = 0; b0 < nb; b0 += kTile) {
      const int nblk = nb - b0 < kTile ? nb - b0 : kTile;
      for (int i = 0; i < R; ++i) {
        const uint8_t *src = q + rows[i] * row_bytes + size_t(b0) * (ML_QK / 2);
        for (int j = 0; j < nblk; ++j) {
          int8x16_t lo, hi;
          ml::arm::unpack_q4(src + size_t(j) * (ML_QK / 2), lo, hi);
          vst1q_s8(unpacked[i] + j * ML_QK, lo);
          vst1q_s8(unpacked[i] + j * ML_QK + 16, hi);
        }
      }
      tile_sums(sums, w, x->q + size_t(b0) * ML_QK, nblk);
      add_tile(acc, sums, b0, nblk);
    }
    acc.store(y + r, R);
  });
}
