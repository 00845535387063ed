// The canonical 4-lane summation (kernels/scalar/sum4.h) with Highway: one 4-lane accumulator
// (FixedTag<float, 4>: 128-bit vectors on every target, predicated 4 lanes on SVE/RVV), elements
// added 4 at a time in index order, a zero-padded last group, then (p0 + p1) + (p2 + p3).
// Include inside HWY_BEFORE_NAMESPACE / namespace hwy::HWY_NAMESPACE (after <cstring> at global scope).

using MlD4 = FixedTag<float, 4>;

HWY_INLINE float MlTotal4(Vec<MlD4> acc) {
  HWY_ALIGN float p[4];
  Store(acc, MlD4(), p);
  return (p[0] + p[1]) + (p[2] + p[3]);
}

// Loads the last n % 4 elements of a (at a + i), zero-padded, without reading past a + n.
HWY_INLINE Vec<MlD4> MlLoadTail4(const float *a, size_t i, size_t n) {
  HWY_ALIGN float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  std::memcpy(t, a + i, (n - i) * sizeof(float));
  return Load(MlD4(), t);
}
