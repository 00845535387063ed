// Rotary position embedding, scalar reference (llama2.c convention: interleaved pairs).
// q: n_heads·head_dim, k: n_kv_heads·head_dim; cos_t/sin_t: row `pos` of the precomputed
// [max_seq][head_dim/2] tables, cos_t[i] = cos(pos·θ^(−2i/head_dim)). For every head and pair i:
//   (v0, v1) = (v[2i], v[2i+1]);  v[2i] = v0·c − v1·s;  v[2i+1] = v0·s + v1·c.
// Products and sums are separate roundings, so SIMD versions (no FMA) are bit-identical.
// Defines: ml_k_rope_scalar
#include "kernels/kernels.h"
#include "kernels/mutants.h"

namespace {
void rotate(float *v, const float *cos_t, const float *sin_t, int head_dim, int n) {
  for (int h = 0; h < n; ++h, v += head_dim)
    for (int i = 0; i < head_dim / 2; ++i) {
      const float v0 = v[2 * i], v1 = v[2 * i + 1], c = cos_t[i];
      const float s = ML_MUTANT("rope_sin") ? -sin_t[i] : sin_t[i];  // mutant: sin sign flipped
      v[2 * i] = v0 * c - v1 * s;
      v[2 * i + 1] = v0 * s + v1 * c;
    }
}
}  // namespace

extern "C" void ml_k_rope_scalar(float *q, float *k, const float *cos_t, const float *sin_t,
                                 int head_dim, int n_heads, int n_kv_heads) {
  rotate(q, cos_t, sin_t, head_dim, n_heads);
  rotate(k, cos_t, sin_t, head_dim, n_kv_heads);
}
