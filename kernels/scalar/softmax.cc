// Softmax in place, scalar reference: m = max x; e_i = exp(x_i − m) (simd/exp.h, the one exp every
// ISA computes bit for bit); s = sum4(e) (kernels/kernels.h); x_i = e_i / s.
// Defines: ml_k_softmax_scalar
#include "kernels/format/sum4.h"
#include "kernels/kernels.h"
#include "kernels/mutants.h"
#include "simd/exp.h"

extern "C" void ml_k_softmax_scalar(float *x, int n) {
  float max_val = x[0];
  for (int i = 1; i < n; ++i) max_val = x[i] > max_val ? x[i] : max_val;
  if (ML_MUTANT("softmax_max")) max_val = 0.0f;  // mutant: no max subtraction
  ml::Sum4 sum;
  for (int i = 0; i < n; ++i) {
    x[i] = ml::simd::exp_scalar(x[i] - max_val);
    sum.add(i, x[i]);
  }
  const float s = sum.total();
  for (int i = 0; i < n; ++i) x[i] /= s;
}
