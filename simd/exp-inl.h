// Vector exp for Highway targets (constants and algorithm: simd/exp.h, which the including file
// includes at global scope). Include inside HWY_BEFORE_NAMESPACE / namespace hwy::HWY_NAMESPACE.

template <class D, class V = hwy::HWY_NAMESPACE::Vec<D>>
HWY_INLINE V MlExp(D d, V x) {
  namespace hn = hwy::HWY_NAMESPACE;
  using namespace ml::simd;
  const hn::RebindToSigned<D> di;
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
  return hn::Mul(hn::Mul(p, s1), s2);
}
