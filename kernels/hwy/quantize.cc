// quantize_q8 with Highway: per block max |x|, then q = trunc(x·id + copysign(0.5, x)) with the
// scalar reference's exact float operations, so q and d are bit-identical to
// kernels/scalar/quantize.cc (tested: verify/kernel_checks.cc). Blocks are 32 floats; the vector
// covers a block in 32/N steps (N = lanes, at most 16 here); the block sums s from the int32 quants
// (SumOfLanes; the scalar ml_block_sums_q8 only for zero blocks). dequantize_q8 below.
// Defines: ml_k_quantize_q8_hwy ml_k_dequantize_q8_hwy
#include "kernels/kernels.h"
#include "simd/hwy.h"

HWY_BEFORE_NAMESPACE();
namespace hwy {
namespace HWY_NAMESPACE {  // extern "C" functions keep their C names inside a namespace
namespace hn = hwy::HWY_NAMESPACE;

extern "C" void ml_k_quantize_q8_hwy(ml_qact *out, const float *x, int k) {
  const hn::CappedTag<float, 16> d;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::Rebind<int8_t, decltype(d)> d8;
  const size_t N = hn::Lanes(d);
  const auto sign = hn::Set(d, -0.0f), half = hn::Set(d, 0.5f);
  const auto lo = hn::Set(d, -127.0f), hi = hn::Set(d, 127.0f);
  for (int b = 0; b < k / ML_QK; ++b) {
    const float *xb = x + b * ML_QK;
    auto m = hn::Zero(d);
    for (size_t j = 0; j < ML_QK; j += N) m = hn::Max(m, hn::Abs(hn::LoadU(d, xb + j)));
    const float amax = hn::GetLane(hn::MaxOfLanes(d, m));
    int8_t *qb = out->q + b * ML_QK;
    const auto id = hn::Set(d, 127.0f / amax);
    out->d[b] = amax / 127.0f;
    if (!(amax >= ML_QUANT_TINY)) {  // a zero block (or NaN): the reference quantizes it
      ml_quantize_row_q8_0(qb, out->d + b, xb, ML_QK);
      ml_block_sums_q8(out->s + b, qb, ML_QK);
      continue;
    }
    auto sum = hn::Zero(di);  // the block sum from the int32 quants (in [−127, 127]: the int8s exactly)
    for (size_t j = 0; j < ML_QK; j += N) {
      const auto v = hn::LoadU(d, xb + j);
      const auto r = hn::Add(hn::Mul(v, id), hn::Or(hn::And(v, sign), half));  // x·id + copysign(0.5, x)
      const auto q = hn::ConvertTo(di, hn::Min(hn::Max(hn::Trunc(r), lo), hi));
      hn::StoreU(hn::DemoteTo(d8, q), d8, qb + j);
      sum = hn::Add(sum, q);
    }
    out->s[b] = hn::GetLane(hn::SumOfLanes(di, sum));
  }
  out->n = k;
}

// dequantize_q8: N quants at a time sign-extended to int32, converted (exact) and multiplied by
// the block's scale: the scalar reference's one product per element.
extern "C" void ml_k_dequantize_q8_hwy(float *y, const int8_t *q, const float *d, int n) {
  const hn::CappedTag<float, 16> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<int8_t, decltype(df)> d8;
  const size_t N = hn::Lanes(df);
  for (int b = 0; b < n / ML_QK; ++b) {
    const auto scale = hn::Set(df, d[b]);
    for (size_t j = 0; j < ML_QK; j += N) {
      const size_t at = size_t(b) * ML_QK + j;
      hn::StoreU(hn::Mul(hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(d8, q + at))), scale), df, y + at);
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace hwy
HWY_AFTER_NAMESPACE();
