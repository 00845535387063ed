// sse2 override: rmsnorm. ss in the canonical sum4 order (one __m128 of partial sums), then
// o = w·(ss·x): bit-identical to kernels/scalar/rmsnorm.cc. o may alias x.
#include <emmintrin.h>

#include <cmath>

#include "kernels/kernels.h"
#include "kernels/x86/sum4_sse.h"

extern "C" void ml_k_rmsnorm_sse2(float *o, const float *x, const float *w, int n, float eps) {
  float ss = ml::x86::sum4_dot(x, x, n);
  ss /= float(n);
  ss += eps;
  ss = 1.0f / std::sqrt(ss);
  const __m128 s = _mm_set1_ps(ss);
  int j = 0;
  for (; j + 4 <= n; j += 4) _mm_storeu_ps(o + j, _mm_mul_ps(_mm_loadu_ps(w + j), _mm_mul_ps(s, _mm_loadu_ps(x + j))));
  for (; j < n; ++j) o[j] = w[j] * (ss * x[j]);
}
