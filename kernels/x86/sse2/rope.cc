// sse2 override: RoPE on interleaved pairs, two pairs per register: (v0, v1) → (v0·c − v1·s,
// v0·s + v1·c) as separate multiplies and adds (bit-identical to kernels/scalar/rope.cc):
// out = v·[c c] + swap(v)·[−s s], where swap exchanges each pair and the sign flips even lanes.
#include <emmintrin.h>

#include "kernels/kernels.h"

namespace {
void rotate(float *v, const float *cos_t, const float *sin_t, int head_dim, int n) {
  const __m128 neg_even = _mm_castsi128_ps(_mm_set_epi32(0, int(0x80000000u), 0, int(0x80000000u)));
  for (int h = 0; h < n; ++h, v += head_dim) {
    int i = 0;
    for (; i + 2 <= head_dim / 2; i += 2) {
      const __m128 x = _mm_loadu_ps(v + 2 * i);                                // v0 v1 v2 v3
      const __m128 cs = _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double *>(cos_t + i)));  // c0 c1 . .
      const __m128 sn = _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double *>(sin_t + i)));
      const __m128 c = _mm_unpacklo_ps(cs, cs);                                // c0 c0 c1 c1
      const __m128 s = _mm_xor_ps(_mm_unpacklo_ps(sn, sn), neg_even);          // -s0 s0 -s1 s1
      const __m128 sw = _mm_shuffle_ps(x, x, _MM_SHUFFLE(2, 3, 0, 1));         // v1 v0 v3 v2
      _mm_storeu_ps(v + 2 * i, _mm_add_ps(_mm_mul_ps(x, c), _mm_mul_ps(sw, s)));
    }
    for (; i < head_dim / 2; ++i) {
      const float v0 = v[2 * i], v1 = v[2 * i + 1], c = cos_t[i], s = sin_t[i];
      v[2 * i] = v0 * c - v1 * s;
      v[2 * i + 1] = v0 * s + v1 * c;
    }
  }
}
}  // namespace

extern "C" void ml_k_rope_sse2(float *q, float *k, const float *cos_t, const float *sin_t, int head_dim, int n_heads,
                               int n_kv_heads) {
  rotate(q, cos_t, sin_t, head_dim, n_heads);
  rotate(k, cos_t, sin_t, head_dim, n_kv_heads);
}
