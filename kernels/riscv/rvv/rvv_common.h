// Helpers shared by the rvv override set (RISC-V Vector 1.0, clang-16 `__riscv_` intrinsics).
// Every kernel of the set is vector-length agnostic: VLEN is anything from 128 bits up (the V
// extension guarantees 128), loops take their vl from vsetvl, and the bits never depend on VLEN
// (tested at 128, 256 and 512: cmake/tests/riscv.cmake).
//
//   Sum4 (sum4_zero / sum4_add / sum4_total)
//            the canonical reduction order of kernels/kernels.h: one accumulator of exactly 4 f32
//            lanes (vl = 4 fits every VLEN), elements added 4 at a time in index order, so lane j
//            is p_j = v_j + v_{j+4} + ...; the last group adds only its vl < 4 elements (tail
//            undisturbed: a missing element adds nothing, the identity), then (p0 + p1) + (p2 + p3)
//            in scalar code. A wider accumulator would add v_j and v_{j+4} into different lanes
//            and combine them later — another rounding — so the 4-lane chain is the definition,
//            not a choice.
//   exp_m2   simd/exp.h's exp op for op (clamp with vfmax/vfmin, which like fmax/fmin return the
//            non-NaN operand; n = round-to-nearest-even through vfcvt.x.f.v in the default frm;
//            separate vfmul/vfadd, never vfmacc; exponent built from integer shifts), so it is
//            exp_scalar's bits lane by lane.
// RVV float arithmetic is IEEE (vfdiv, vfsqrt correctly rounded; denormals kept), and the
// intrinsics are never contracted into FMAs (-ffp-contract=off; vfmacc is only ever explicit).
#pragma once
#include <riscv_vector.h>

#include <cstddef>
#include <cstdint>

#include "simd/exp.h"

namespace ml::rvv {

inline vfloat32m1_t sum4_zero() { return __riscv_vfmv_v_f_f32m1(0.0f, 4); }

// acc[0, vl) += v[0, vl), vl <= 4; lanes vl..3 keep their value.
inline vfloat32m1_t sum4_add(vfloat32m1_t acc, vfloat32m1_t v, size_t vl) {
  return __riscv_vfadd_vv_f32m1_tu(acc, acc, v, vl);
}

inline float sum4_total(vfloat32m1_t acc) {
  float p[4];
  __riscv_vse32_v_f32m1(p, acc, 4);
  return (p[0] + p[1]) + (p[2] + p[3]);
}

// sum4 of term(i, vl) for i = 0, 4, 8, ... < n: term returns the f32 values of elements
// [i, i + vl) in lanes [0, vl) (vl = 4, or n % 4 for the last group).
template <class Term>
inline float sum4(size_t n, Term term) {
  vfloat32m1_t acc = sum4_zero();
  size_t i = 0;
  for (; i + 4 <= n; i += 4) acc = sum4_add(acc, term(i, size_t(4)), 4);
  if (i < n) acc = sum4_add(acc, term(i, n - i), n - i);
  return sum4_total(acc);
}

inline vfloat32m2_t exp_m2(vfloat32m2_t x, size_t vl) {
  using namespace ml::simd;
  x = __riscv_vfmin_vf_f32m2(__riscv_vfmax_vf_f32m2(x, kExpLo, vl), kExpHi, vl);
  const vint32m2_t ni = __riscv_vfcvt_x_f_v_i32m2(__riscv_vfmul_vf_f32m2(x, kLog2e, vl), vl);  // nearbyint
  const vfloat32m2_t n = __riscv_vfcvt_f_x_v_f32m2(ni, vl);  // exact: |n| <= 150
  vfloat32m2_t r = __riscv_vfsub_vv_f32m2(x, __riscv_vfmul_vf_f32m2(n, kLn2Hi, vl), vl);
  r = __riscv_vfsub_vv_f32m2(r, __riscv_vfmul_vf_f32m2(n, kLn2Lo, vl), vl);
  vfloat32m2_t p = __riscv_vfmv_v_f_f32m2(kExpC6, vl);
  p = __riscv_vfadd_vf_f32m2(__riscv_vfmul_vv_f32m2(p, r, vl), kExpC5, vl);
  p = __riscv_vfadd_vf_f32m2(__riscv_vfmul_vv_f32m2(p, r, vl), kExpC4, vl);
  p = __riscv_vfadd_vf_f32m2(__riscv_vfmul_vv_f32m2(p, r, vl), kExpC3, vl);
  p = __riscv_vfadd_vf_f32m2(__riscv_vfmul_vv_f32m2(p, r, vl), kExpC2, vl);
  p = __riscv_vfadd_vf_f32m2(__riscv_vfmul_vv_f32m2(p, r, vl), 1.0f, vl);
  p = __riscv_vfadd_vf_f32m2(__riscv_vfmul_vv_f32m2(p, r, vl), 1.0f, vl);
  const vint32m2_t n1 = __riscv_vsra_vx_i32m2(ni, 1, vl), n2 = __riscv_vsub_vv_i32m2(ni, n1, vl);
  const vfloat32m2_t s1 =
      __riscv_vreinterpret_v_i32m2_f32m2(__riscv_vsll_vx_i32m2(__riscv_vadd_vx_i32m2(n1, 127, vl), 23, vl));
  const vfloat32m2_t s2 =
      __riscv_vreinterpret_v_i32m2_f32m2(__riscv_vsll_vx_i32m2(__riscv_vadd_vx_i32m2(n2, 127, vl), 23, vl));
  return __riscv_vfmul_vv_f32m2(__riscv_vfmul_vv_f32m2(p, s1, vl), s2, vl);
}

}  // namespace ml::rvv
