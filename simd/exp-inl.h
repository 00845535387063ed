// Vector exp for Highway targets (constants and algorithm: simd/exp.h, which the including file
// includes at global scope). Include inside HWY_BEFORE_NAMESPACE / namespace hwy::HWY_NAMESPACE.

template <class D, class V = hwy::HWY_NAMESPACE::Vec<D>>
HWY_INLINE V MlExp(D d, V x) {
  namespace hn = hwy::HWY_NAMESPACE;
  using namespace ml::simd;
  const hn::RebindToSigned<D> di;
#if HWY_ARCH_ARM_V7
  const V x_in = x;
#endif
  x = hn::Min(hn::Max(x, hn::Set(d, kExpLo)), hn::Set(d, kExpHi));
  const V n = hn::Round(hn::Mul(x, hn::Set(d, kLog2e)));
  V r = hn::Sub(x, hn::Mul(n, hn::Set(d, kLn2Hi)));
  r = hn::Sub(r, hn::Mul(n, hn::Set(d, kLn2Lo)));
  V p = hn::Set(d, kExpC6);
  p = hn::Add(hn::Mul(p, r), hn::Set(d, kExpC5));
  p = hn::Add(hn::Mul(p, r), hn::Set(d, kExpC4));
  p = hn::Add(hn::Mul(p, r), hn::Set(d, kExpC3));
  p = hn::Add(hn::Mul(p, r), hn::Set(d, kExpC2));
  p = hn::Add(hn::Mul(p, r), hn::Set(d, 1.0f));
  p = hn::Add(hn::Mul(p, r), hn::Set(d, 1.0f));
  const auto ni = hn::ConvertTo(di, n);
  const auto n1 = hn::ShiftRight<1>(ni), n2 = hn::Sub(ni, n1);
  const auto bias = hn::Set(di, 127);
  const V s1 = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(n1, bias)));
  const V s2 = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(n2, bias)));
#if HWY_ARCH_ARM_V7
  // ARMv7 NEON flushes denormal results to zero (exp(x) < 2^-126 for x < -87.34): lanes with
  // x < -86.5 (or NaN) are recomputed by exp_scalar with VFP, which keeps denormals (IEEE).
  const V y = hn::Mul(hn::Mul(p, s1), s2);
  const auto low = hn::Not(hn::Ge(x_in, hn::Set(d, -86.5f)));
  if (hn::AllFalse(d, low)) return y;
  HWY_ALIGN float xs[HWY_MAX_BYTES / sizeof(float)], ys[HWY_MAX_BYTES / sizeof(float)];
  hn::Store(x_in, d, xs);
  hn::Store(y, d, ys);
  for (size_t i = 0; i < hn::Lanes(d); ++i)
    if (!(xs[i] >= -86.5f)) ys[i] = exp_scalar(xs[i]);
  return hn::Load(d, ys);
#else
  return hn::Mul(hn::Mul(p, s1), s2);
#endif
}
