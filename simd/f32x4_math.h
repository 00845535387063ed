// Float math written once against the 4-lane layer (simd/f32x4.h), so every ISA it maps to gets
// the scalar reference's bits by construction (references: kernels/scalar/*.cc; the order:
// kernels/kernels.h). The sse2 and rvv override sets' float kernels are these functions, and the
// Highway bodies (kernels/hwy/) take their sum4 reductions from here.
//   exp(x)          simd/exp.h's polynomial op for op (the clamp with min/max's NaN rule = fmin/fmax)
//   sum4(n, term)   the canonical order: lane j of one accumulator gets term j, j+4, ... in index
//                   order; the last group zero-padded (+0 is the identity of a sum that starts at
//                   +0); then total() = (p0 + p1) + (p2 + p3).  dot / sum are its two uses.
//   map2            out[i] = f(a[i], b[i]) four at a time; the tail through one zero-padded vector,
//                   so every element sees the same arithmetic. out may alias a or b.
//   silu_mul, add, exp_f32, axpy, rmsnorm, softmax, rope: the kernels of kernels/kernels.h.
// Lambdas capture floats, not vectors: RVV vector types are sizeless and cannot be captured.
// RoPE: pairs (v0, v1) go two to a vector as v·[c c] + swap(v)·[−s s] — the reference's
// v0·c − v1·s and v0·s + v1·c, as a + (−b) = a − b and x·(−s) = −(x·s) exactly.
#pragma once
#include <initializer_list>

#include "simd/exp.h"
#include "simd/f32x4.h"

namespace ml::f4 {

inline F4 exp(F4 x) {
  using namespace ml::simd;
  x = min(max(x, splat(kExpLo)), splat(kExpHi));
  const I4 ni = round_i(mul(x, splat(kLog2e)));
  const F4 n = to_f(ni);  // exact: |n| <= 150
  const F4 r = sub(sub(x, mul(n, splat(kLn2Hi))), mul(n, splat(kLn2Lo)));
  F4 p = splat(kExpC6);
  for (const float c : {kExpC5, kExpC4, kExpC3, kExpC2, 1.0f, 1.0f}) p = add(mul(p, r), splat(c));
  const I4 n1 = shr1(ni);
  return mul(mul(p, pow2(n1)), pow2(isub(ni, n1)));
}

template <class Term>
inline float sum4(int n, Term term) {
  F4 acc = splat(0.0f);
  int i = 0;
  for (; i + 4 <= n; i += 4) acc = add(acc, term(i, 4));
  if (i < n) acc = add(acc, term(i, n - i));
  return total(acc);
}

// Four lanes of p from index i (m < 4: the last m, zero-padded).
inline F4 load_m(const float *p, int i, int m) { return m == 4 ? load(p + i) : load_n(p + i, m); }

inline float dot(const float *a, const float *b, int n) {
  return sum4(n, [&](int i, int m) { return mul(load_m(a, i, m), load_m(b, i, m)); });
}
inline float sum(const float *a, int n) {
  return sum4(n, [&](int i, int m) { return load_m(a, i, m); });
}

template <class F>
inline void map2(float *out, const float *a, const float *b, int n, F f) {
  int i = 0;
  for (; i + 4 <= n; i += 4) store(out + i, f(load(a + i), load(b + i)));
  if (i < n) store_n(out + i, f(load_n(a + i, n - i), load_n(b + i, n - i)), n - i);
}

inline void silu_mul(float *g, const float *u, int n) {  // g · (1 / (1 + exp(−g))) · u
  map2(g, g, u, n, [](F4 gv, F4 uv) {
    const F4 one = splat(1.0f);
    return mul(mul(gv, div(one, add(one, exp(sub(splat(0.0f), gv))))), uv);
  });
}
inline void add(float *y, const float *x, int n) {
  map2(y, y, x, n, [](F4 yv, F4 xv) { return add(yv, xv); });
}
inline void exp_f32(float *y, const float *x, int n) {
  map2(y, x, x, n, [](F4 xv, F4) { return exp(xv); });
}
inline void axpy(float *y, float a, const float *x, int n) {
  map2(y, y, x, n, [a](F4 yv, F4 xv) { return add(yv, mul(splat(a), xv)); });
}

// dot(q, k_p) / den for `cols` positions p whose elements are ldk floats apart (kt element-major:
// element i of position p at kt[i·ldk + p]). Lanes are positions; four accumulators take the
// elements i mod 4 = 0, 1, 2, 3 in index order and are combined as (a0 + a1) + (a2 + a3) lane for
// lane: each position's sum4 exactly, with no horizontal sums; then one IEEE division. Eight
// positions at a time (two vectors, eight independent add chains), then four, the last 1-3 through
// zero-padded loads.
//
// G vectors of positions from kt (G = 2: eight positions; G = 1: m = 1..4 positions, zero-padded).
template <int G>
inline void dot_cols_group(float *s, const float *q, const float *kt, size_t ldk, int n, int m, float den) {
  F4 a0 = splat(0.0f), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
  const auto step = [&](F4 &acc, F4 &acc2, int i) {  // element i into one partial
    const float *k = kt + size_t(i) * ldk;
    const F4 qv = splat(q[i]);
    acc = add(acc, mul(qv, G == 2 ? load(k) : load_m(k, 0, m)));
    if (G == 2) acc2 = add(acc2, mul(qv, load(k + 4)));
  };
  const int n4 = n & ~3;
  int i = 0;
  for (; i < n4; i += 4) {
    step(a0, b0, i);
    step(a1, b1, i + 1);
    step(a2, b2, i + 2);
    step(a3, b3, i + 3);
  }
  if (i < n) step(a0, b0, i);  // the last 1-3 elements: partials 0, 1, 2
  if (i + 1 < n) step(a1, b1, i + 1);
  if (i + 2 < n) step(a2, b2, i + 2);
  const F4 dv = splat(den);
  const F4 sa = div(add(add(a0, a1), add(a2, a3)), dv);
  if (G == 2) {
    store(s, sa);
    store(s + 4, div(add(add(b0, b1), add(b2, b3)), dv));
  } else if (m == 4) {
    store(s, sa);
  } else {
    store_n(s, sa, m);
  }
}

inline void dot_cols(float *s, const float *q, const float *kt, size_t ldk, int cols, int n, float den) {
  int p = 0;
  for (; p + 8 <= cols; p += 8) dot_cols_group<2>(s + p, q, kt + p, ldk, n, 4, den);
  for (; p < cols; p += 4) dot_cols_group<1>(s + p, q, kt + p, ldk, n, cols - p < 4 ? cols - p : 4, den);
}

// axpy(y, a[r], x_r) for r = 0, 1, ... in order: y four vectors (16 floats) at a time, held across
// the rows (four independent chains), then four floats at a time, then the zero-padded tail.
inline void axpy_rows(float *y, const float *a, const float *x, size_t ldx, int rows, int n) {
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    F4 y0 = load(y + i), y1 = load(y + i + 4), y2 = load(y + i + 8), y3 = load(y + i + 12);
    for (int r = 0; r < rows; ++r) {
      const float *xr = x + size_t(r) * ldx + i;
      const F4 av = splat(a[r]);
      y0 = add(y0, mul(av, load(xr)));
      y1 = add(y1, mul(av, load(xr + 4)));
      y2 = add(y2, mul(av, load(xr + 8)));
      y3 = add(y3, mul(av, load(xr + 12)));
    }
    store(y + i, y0);
    store(y + i + 4, y1);
    store(y + i + 8, y2);
    store(y + i + 12, y3);
  }
  for (; i < n; i += 4) {
    const int m = n - i < 4 ? n - i : 4;
    F4 yv = load_m(y, i, m);
    for (int r = 0; r < rows; ++r) yv = add(yv, mul(splat(a[r]), load_m(x + size_t(r) * ldx, i, m)));
    if (m == 4)
      store(y + i, yv);
    else
      store_n(y + i, yv, m);
  }
}

inline void rmsnorm(float *o, const float *x, const float *w, int n, float eps) {
  float ss = dot(x, x, n);
  ss /= float(n);
  ss += eps;
  ss = 1.0f / std::sqrt(ss);
  map2(o, w, x, n, [ss](F4 wv, F4 xv) { return mul(wv, mul(splat(ss), xv)); });
}

inline void softmax(float *x, int n) {
  float max_val = x[0];
  for (int i = 1; i < n; ++i) max_val = x[i] > max_val ? x[i] : max_val;
  map2(x, x, x, n, [max_val](F4 v, F4) { return exp(sub(v, splat(max_val))); });
  const float s = sum(x, n);
  map2(x, x, x, n, [s](F4 v, F4) { return div(v, splat(s)); });
}

// One head: head_dim / 2 interleaved pairs, two per vector (an odd last pair zero-padded).
inline void rope_head(float *v, const float *cos_t, const float *sin_t, int head_dim) {
  const int len = head_dim / 2 * 2;
  for (int i = 0; i < len; i += 4) {
    const int m = len - i < 4 ? len - i : 4, k = i / 2;
    const float c1 = m == 4 ? cos_t[k + 1] : 0.0f, s1 = m == 4 ? sin_t[k + 1] : 0.0f;
    const float cs[4] = {cos_t[k], cos_t[k], c1, c1}, sn[4] = {-sin_t[k], sin_t[k], -s1, s1};
    const F4 x = load_m(v, i, m), y = add(mul(x, load(cs)), mul(swap_pairs(x), load(sn)));
    m == 4 ? store(v + i, y) : store_n(v + i, y, m);
  }
}
inline void rope(float *q, float *k, const float *cos_t, const float *sin_t, int head_dim, int n_heads,
                 int n_kv_heads) {
  for (int h = 0; h < n_heads; ++h) rope_head(q + h * head_dim, cos_t, sin_t, head_dim);
  for (int h = 0; h < n_kv_heads; ++h) rope_head(k + h * head_dim, cos_t, sin_t, head_dim);
}

}  // namespace ml::f4
