// RMS norm, scalar reference: o[i] = w[i] · (x[i] / sqrt(mean(x²) + eps)), computed as llama2.c's
// rmsnorm (ss summed left to right, ss/n + eps, 1/sqrtf, then w·(ss·x)). o may alias x.
#include <cmath>

#include "kernels/kernels.h"

extern "C" void ml_k_rmsnorm_scalar(float *o, const float *x, const float *w, int n, float eps) {
  float ss = 0.0f;
  for (int j = 0; j < n; ++j) ss += x[j] * x[j];
  ss /= float(n);
  ss += eps;
  ss = 1.0f / std::sqrt(ss);
  for (int j = 0; j < n; ++j) o[j] = w[j] * (ss * x[j]);
}
