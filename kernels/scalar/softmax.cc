// Softmax in place, scalar reference: x[i] = exp(x[i] − max) / Σ exp(x[j] − max), with libm expf.
// SIMD versions use simd/ exp polynomials (relative error ≤ 1e-6 on [−88, 88]).
#include <cmath>

#include "kernels/kernels.h"

extern "C" void ml_k_softmax_scalar(float *x, int n) {
  float max_val = x[0];
  for (int i = 1; i < n; ++i) max_val = x[i] > max_val ? x[i] : max_val;
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max_val);
    sum += x[i];
  }
  for (int i = 0; i < n; ++i) x[i] /= sum;
}
