// RMS norm, scalar reference: o[i] = w[i] · (x[i] / sqrt(mean(x²) + eps)), computed as llama2.c's
// rmsnorm (ss/n + eps, 1/sqrtf, then w·(ss·x)) except that ss = sum4(x·x), the canonical order
// of kernels/kernels.h. o may alias x.
// Defines: ml_k_rmsnorm_scalar
#include <cmath>

#include "kernels/format/sum4.h"
#include "kernels/kernels.h"
#include "kernels/mutants.h"

extern "C" void ml_k_rmsnorm_scalar(float *o, const float *x, const float *w, int n, float eps) {
  ml::Sum4 sum;
  for (int j = 0; j < n; ++j) sum.add(j, x[j] * x[j]);
  float ss = sum.total();
  ss /= float(n);
  if (!ML_MUTANT("rmsnorm_eps")) ss += eps;  // mutant: eps dropped
  ss = 1.0f / std::sqrt(ss);
  for (int j = 0; j < n; ++j) o[j] = w[j] * (ss * x[j]);
}
