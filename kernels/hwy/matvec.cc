// Matrix-vector products written once against Highway (the portable SIMD path of every ISA with a
// Highway target; ISAs with a faster instruction override it, see kernels/kernel_table.h).
// Contract and reference: kernels/scalar/matvec.cc. Tests: verify/kernel_checks.cc.
//   matvec_q8/q4: int8 → int16 (PromoteTo), ReorderWidenMulAccumulate into int32, one block's lanes
//   summed (SumOfLanes) to the exact int32 block sum; t_b = (sumi·dw)·dx summed in the canonical
//   sum4 order (bit-identical to the reference). Highway 1.0.3 has no int8 dot product, hence the
//   widening. Both layouts; matmul_q8/q4 batch 4 tokens per weight load on panels (below).
//   matvec_f32: 4 rows share each x vector; 1 accumulator per row; scalar tail.
// Defines: ml_k_matvec_q8_hwy ml_k_matvec_q4_hwy ml_k_matmul_q8_hwy ml_k_matmul_q4_hwy ml_k_peak_hwy
// Defines: ml_k_matvec_f32_hwy
#include "kernels/format/sum4.h"
#include "kernels/kernels.h"
#include "kernels/panel_driver.h"
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

// Layout 0 (rows): block b of row r unpacked if Q4, block_dot, Sum4.
template <bool Q4>
void rows(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
  constexpr size_t kBytes = Q4 ? ML_QK / 2 : ML_QK;
  const int nb = W->cols / ML_QK;
  alignas(64) int8_t w8[ML_QK];
  for (int r = r0; r < r1; ++r) {
    const uint8_t *w = static_cast<const uint8_t *>(W->q) + size_t(r) * nb * kBytes;
    const float *dw = W->d + size_t(r) * nb;
    ml::Sum4 sum;
    for (int b = 0; b < nb; ++b) {
      if (Q4) unpack_q4(w + b * kBytes, w8);
      const int8_t *wb = Q4 ? w8 : reinterpret_cast<const int8_t *>(w + b * kBytes);
      sum.add(b, float(block_dot(wb, x->q + b * ML_QK)) * dw[b] * x->d[b]);
    }
    y[r] = sum.total();
  }
}

// Layout 1 (16-row panels, docs/mlb-format.md): the loop, token batching and row tails are
// kernels/panel_driver.h's; lane = row. The float part is Highway, 16 rows at a time; the integer
// part is plain C++ (a unit holds 4 weights of each of 16 rows, which Highway 1.0.3 has no
// grouped int8 dot for). Portable, not tuned: hwy's panels bind only where no ISA set does
// (rv64, whose Highway target EMU128 is scalar code anyway).
using DF = hn::CappedTag<float, ML_PANEL_ROWS>;
using DI = hn::RebindToSigned<DF>;

struct Width {
  static constexpr int kTokens = 4;
  struct Sums {
    int32_t v[ML_PANEL_ROWS];
  };
  struct Acc {
    float v[ML_PANEL_ROWS];
  };
  static Acc zero() { return {}; }  // +0.0f
  static Acc fold(Acc a, const Sums &s, const float *d, float dx) {  // a + (float(s) · d) · dx
    const DF df;
    for (size_t i = 0; i < ML_PANEL_ROWS; i += hn::Lanes(df)) {
      const auto t = hn::Mul(hn::ConvertTo(df, hn::LoadU(DI(), s.v + i)), hn::LoadU(df, d + i));
      hn::StoreU(hn::Add(hn::LoadU(df, a.v + i), hn::Mul(t, hn::Set(df, dx))), df, a.v + i);
    }
    return a;
  }
  static Acc add(Acc a, const Acc &b) {
    const DF df;
    for (size_t i = 0; i < ML_PANEL_ROWS; i += hn::Lanes(df))
      hn::StoreU(hn::Add(hn::LoadU(df, a.v + i), hn::LoadU(df, b.v + i)), df, a.v + i);
    return a;
  }
  static void store(float *y, const Acc &a, int lo, int hi) {
    for (int i = lo; i < hi; ++i) y[i] = a.v[i];
  }
};

struct Int {
  using Sums = Width::Sums;
  using Wq8 = const int8_t *;  // weights and x are read where they lie
  using Wq4 = const uint8_t *;
  static Wq8 load_q8(Wq8 units) { return units; }
  static Wq4 load_q4(Wq4 units) { return units; }
  using X = const int8_t *;  // the block's 32 quants
  template <bool Q4>
  static X prep(X xb, int32_t) { return xb; }
  static Sums dot(Wq8 w, X x) {  // unit u: weights 4u..4u+3 of each row, at 4i..4i+3
    Sums s{};
    for (int u = 0; u < 8; ++u)
      for (int i = 0; i < ML_PANEL_ROWS; ++i)
        for (int k = 0; k < 4; ++k) s.v[i] += w[64 * u + 4 * i + k] * x[4 * u + k];
    return s;
  }
  static Sums dot(Wq4 w, X x) {  // low nibbles: weights 4u.., high: 16 + 4u..
    Sums s{};
    for (int u = 0; u < 4; ++u)
      for (int i = 0; i < ML_PANEL_ROWS; ++i)
        for (int k = 0; k < 4; ++k) {
          const int v = w[64 * u + 4 * i + k];
          s.v[i] += ((v & 0x0F) - 8) * x[4 * u + k] + ((v >> 4) - 8) * x[16 + 4 * u + k];
        }
    return s;
  }
};

ML_PANEL_KERNELS(hwy, Width, Int, rows<false>, rows<true>)

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
