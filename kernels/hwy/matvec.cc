// Matrix-vector products written once against Highway (the portable SIMD path of every ISA with a
// Highway target; ISAs with a faster instruction override it, see kernels/kernel_table.h).
// Contract and reference: kernels/scalar/matvec.cc. Tests: verify/kernel_checks.cc.
//   matvec_q8/q4: int8 → int16 (PromoteTo), ReorderWidenMulAccumulate into int32, one block's lanes
//   summed (SumOfLanes) to the exact int32 block sum; t_b = (sumi·dw)·dx summed in the canonical
//   sum4 order (bit-identical to the reference). Highway 1.0.3 has no int8 dot product, hence the
//   widening.
//   matvec_f32: 4 rows share each x vector; 1 accumulator per row; scalar tail.
#include "kernels/kernels.h"
#include "kernels/scalar/sum4.h"
#include "simd/hwy.h"

HWY_BEFORE_NAMESPACE();
namespace hwy {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;

using D32 = hn::CappedTag<int32_t, ML_QK / 2>;  // 16 int16 pairs of one block at most
using D16 = hn::Repartition<int16_t, D32>;
using D8 = hn::Rebind<int8_t, D16>;

// Exact int32 sum of one block: w (int8, already unpacked), x (int8).
HWY_INLINE int32_t block_dot(const int8_t *w, const int8_t *x) {
  const D32 d32;
  const D16 d16;
  const D8 d8;
  const size_t N = hn::Lanes(d16);
  auto s0 = hn::Zero(d32), s1 = hn::Zero(d32);
  for (size_t j = 0; j < ML_QK; j += N) {
    const auto w16 = hn::PromoteTo(d16, hn::LoadU(d8, w + j));
    const auto x16 = hn::PromoteTo(d16, hn::LoadU(d8, x + j));
    s0 = hn::ReorderWidenMulAccumulate(d32, w16, x16, s0, s1);
  }
  return hn::GetLane(hn::SumOfLanes(d32, hn::Add(s0, s1)));
}

// Q4_0 block → 32 int8 values (nibble − 8), low nibbles first.
HWY_INLINE void unpack_q4(const uint8_t *q, int8_t *out) {
  const hn::CappedTag<uint8_t, ML_QK / 2> du8;
  const hn::RebindToSigned<decltype(du8)> di8;
  const size_t N = hn::Lanes(du8);
  const auto mask = hn::Set(du8, 0x0F);
  const auto eight = hn::Set(di8, 8);
  for (size_t j = 0; j < ML_QK / 2; j += N) {
    const auto b = hn::LoadU(du8, q + j);
    hn::StoreU(hn::Sub(hn::BitCast(di8, hn::And(b, mask)), eight), di8, out + j);
    hn::StoreU(hn::Sub(hn::BitCast(di8, hn::ShiftRight<4>(b)), eight), di8, out + ML_QK / 2 + j);
  }
}

}  // namespace
namespace hn = hwy::HWY_NAMESPACE;

// Layout 1 (16-row panels): each block of a panel is de-interleaved into 16 row blocks (the units
// hold 4 weights of 16 rows, docs/mlb-format.md), then block_dot as above. Portable, not tuned:
// ISAs with a lane-per-row dot product override this.
template <bool Q4>
void panel_matvec(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  const int nb = W->cols / ML_QK;
  constexpr size_t kUnits = Q4 ? 4 : 8;
  const uint8_t *q = static_cast<const uint8_t *>(W->q);
  alignas(64) int8_t rows[ML_PANEL_ROWS][ML_QK];
  for (int p = r0 / ML_PANEL_ROWS; p * ML_PANEL_ROWS < r1; ++p) {
    ml::Sum4 sum[ML_PANEL_ROWS];
    for (int b = 0; b < nb; ++b) {
      const uint8_t *units = q + (size_t(p) * nb + b) * kUnits * 64;
      const float *d = W->d + (size_t(p) * nb + b) * ML_PANEL_ROWS;
      for (int i = 0; i < ML_PANEL_ROWS; ++i)
        for (size_t u = 0; u < kUnits; ++u)
          for (int t = 0; t < 4; ++t) {
            const uint8_t v = units[u * 64 + 4 * i + t];
            if (Q4) {
              rows[i][4 * u + t] = int8_t((v & 0x0F) - 8);
              rows[i][16 + 4 * u + t] = int8_t((v >> 4) - 8);
            } else {
              rows[i][4 * u + t] = int8_t(v);
            }
          }
      for (int i = 0; i < ML_PANEL_ROWS; ++i)
        sum[i].add(b, float(block_dot(rows[i], x->q + b * ML_QK)) * d[i] * x->d[b]);
    }
    for (int i = 0; i < ML_PANEL_ROWS; ++i) {
      const int r = p * ML_PANEL_ROWS + i;
      if (r >= r0 && r < r1) y[r] = sum[i].total();
    }
  }
}

extern "C" void ml_k_matvec_q8_hwy(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  if (W->layout == ML_LAYOUT_PANEL16) return panel_matvec<false>(y, W, x, r0, r1);
  const int nb = W->cols / ML_QK;
  const int8_t *q = static_cast<const int8_t *>(W->q);
  for (int r = r0; r < r1; ++r) {
    const int8_t *w = q + size_t(r) * W->cols;
    const float *dw = W->d + size_t(r) * nb;
    ml::Sum4 sum;
    for (int b = 0; b < nb; ++b) sum.add(b, float(hn::block_dot(w + b * ML_QK, x->q + b * ML_QK)) * dw[b] * x->d[b]);
    y[r] = sum.total();
  }
}

extern "C" void ml_k_matvec_q4_hwy(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  if (W->layout == ML_LAYOUT_PANEL16) return panel_matvec<true>(y, W, x, r0, r1);
  const int nb = W->cols / ML_QK;
  const uint8_t *q = static_cast<const uint8_t *>(W->q);
  alignas(64) int8_t w8[ML_QK];
  for (int r = r0; r < r1; ++r) {
    const uint8_t *w = q + size_t(r) * nb * (ML_QK / 2);
    const float *dw = W->d + size_t(r) * nb;
    ml::Sum4 sum;
    for (int b = 0; b < nb; ++b) {
      hn::unpack_q4(w + b * (ML_QK / 2), w8);
      sum.add(b, float(hn::block_dot(w8, x->q + b * ML_QK)) * dw[b] * x->d[b]);
    }
    y[r] = sum.total();
  }
}

extern "C" void ml_k_matvec_f32_hwy(float *y, const ml_qtensor *W, const float *x, int r0, int r1) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const size_t K = size_t(W->cols), Kv = K - K % N;
  const float *w = static_cast<const float *>(W->q);
  int r = r0;
  for (; r + 4 <= r1; r += 4) {
    const float *w0 = w + size_t(r) * K, *w1 = w0 + K, *w2 = w1 + K, *w3 = w2 + K;
    auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
    for (size_t j = 0; j < Kv; j += N) {
      const auto xv = hn::LoadU(d, x + j);
      a0 = hn::MulAdd(hn::LoadU(d, w0 + j), xv, a0);
      a1 = hn::MulAdd(hn::LoadU(d, w1 + j), xv, a1);
      a2 = hn::MulAdd(hn::LoadU(d, w2 + j), xv, a2);
      a3 = hn::MulAdd(hn::LoadU(d, w3 + j), xv, a3);
    }
    float s[4] = {hn::GetLane(hn::SumOfLanes(d, a0)), hn::GetLane(hn::SumOfLanes(d, a1)),
                  hn::GetLane(hn::SumOfLanes(d, a2)), hn::GetLane(hn::SumOfLanes(d, a3))};
    for (size_t j = Kv; j < K; ++j) {
      s[0] += w0[j] * x[j];
      s[1] += w1[j] * x[j];
      s[2] += w2[j] * x[j];
      s[3] += w3[j] * x[j];
    }
    for (int i = 0; i < 4; ++i) y[r + i] = s[i];
  }
  for (; r < r1; ++r) {
    const float *wr = w + size_t(r) * K;
    auto a = hn::Zero(d);
    for (size_t j = 0; j < Kv; j += N) a = hn::MulAdd(hn::LoadU(d, wr + j), hn::LoadU(d, x + j), a);
    float s = hn::GetLane(hn::SumOfLanes(d, a));
    for (size_t j = Kv; j < K; ++j) s += wr[j] * x[j];
    y[r] = s;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace hwy
HWY_AFTER_NAMESPACE();
