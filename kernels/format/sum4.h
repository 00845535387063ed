// The canonical summation order of legacy-ml's reductions (kernels/kernels.h): four partial sums,
// element i going to partial i mod 4 in index order, combined as (p0 + p1) + (p2 + p3). SIMD code
// gets the same bits with one 4-lane accumulator (128-bit registers natively; wider ISAs add their
// vector 4 lanes at a time). This is the scalar statement of that order.
#pragma once

namespace ml {

struct Sum4 {
  float p[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  void add(int i, float v) { p[i & 3] += v; }
  float total() const { return (p[0] + p[1]) + (p[2] + p[3]); }
};

}  // namespace ml
