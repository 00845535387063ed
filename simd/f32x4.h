// The 4-lane float layer: one vector type F4 (four f32 lanes) and I4 (four i32 lanes) with a dozen
// inline ops, mapped to the build's ISA at compile time, so the canonical sum4 order, the exp
// polynomial and the float kernels built on them (simd/f32x4_math.h) are written once.
//   SSE2 (every x86-64 build)   __m128 / __m128i
//   NEON (AArch64)              float32x4_t / int32x4_t (maxnm/minnm, vcvtnq: IEEE, nearest-even)
//   WASM SIMD128                v128_t (pmax/pmin with the bound first give fmax's NaN rule)
//   RVV                         vfloat32m1_t / vint32m1_t at vl = 4 (every VLEN >= 128 holds 4)
//   scalar (rv64, ARMv7, ...)   four floats in a struct; ARMv7 NEON is not used here because it
//                               flushes denormals to zero, which VFP (IEEE) does not
// Every op is one IEEE operation per lane (no fused multiply-add, -ffp-contract=off), so each
// backend gives the scalar reference's bits. Ops:
//   load/store (unaligned), load_n/store_n (n < 4 lanes, zero-padded, never past p + n),
//   splat, add, sub, mul, div, min/max (min(a, b): b where a is NaN, like std::fmin(a, b)),
//   round_i (nearest-even), to_f, shr1 (arithmetic >> 1), isub, pow2(n) = 2^n as a float
//   (n in [-126, 127], built from exponent bits), swap_pairs ([a1 a0 a3 a2]),
//   total(p) = (p0 + p1) + (p2 + p3), the combine of the canonical sum4 (kernels/kernels.h).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#define ML_F4_SSE2 1
#elif defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#define ML_F4_NEON 1
#elif defined(__wasm_simd128__)
#include <wasm_simd128.h>
#define ML_F4_WASM 1
#elif defined(__riscv_vector)
#include <riscv_vector.h>
#define ML_F4_RVV 1
#endif

namespace ml::f4 {

#if ML_F4_SSE2
using F4 = __m128;
using I4 = __m128i;
inline F4 load(const float *p) { return _mm_loadu_ps(p); }
inline void store(float *p, F4 v) { _mm_storeu_ps(p, v); }
inline F4 splat(float a) { return _mm_set1_ps(a); }
inline F4 add(F4 a, F4 b) { return _mm_add_ps(a, b); }
inline F4 sub(F4 a, F4 b) { return _mm_sub_ps(a, b); }
inline F4 mul(F4 a, F4 b) { return _mm_mul_ps(a, b); }
inline F4 div(F4 a, F4 b) { return _mm_div_ps(a, b); }
inline F4 max(F4 a, F4 b) { return _mm_max_ps(a, b); }  // NaN in a: b
inline F4 min(F4 a, F4 b) { return _mm_min_ps(a, b); }
inline I4 round_i(F4 a) { return _mm_cvtps_epi32(a); }  // MXCSR mode: nearest-even by default
inline F4 to_f(I4 a) { return _mm_cvtepi32_ps(a); }
inline I4 shr1(I4 a) { return _mm_srai_epi32(a, 1); }
inline I4 isub(I4 a, I4 b) { return _mm_sub_epi32(a, b); }
inline F4 pow2(I4 n) { return _mm_castsi128_ps(_mm_slli_epi32(_mm_add_epi32(n, _mm_set1_epi32(127)), 23)); }
inline F4 swap_pairs(F4 a) { return _mm_shuffle_ps(a, a, _MM_SHUFFLE(2, 3, 0, 1)); }
inline float total(F4 p) {
  const F4 pairs = _mm_add_ps(p, _mm_shuffle_ps(p, p, _MM_SHUFFLE(3, 3, 3, 1)));  // p0+p1 . p2+p3 .
  return _mm_cvtss_f32(_mm_add_ss(pairs, _mm_movehl_ps(pairs, pairs)));
}
#elif ML_F4_NEON
using F4 = float32x4_t;
using I4 = int32x4_t;
inline F4 load(const float *p) { return vld1q_f32(p); }
inline void store(float *p, F4 v) { vst1q_f32(p, v); }
inline F4 splat(float a) { return vdupq_n_f32(a); }
inline F4 add(F4 a, F4 b) { return vaddq_f32(a, b); }
inline F4 sub(F4 a, F4 b) { return vsubq_f32(a, b); }
inline F4 mul(F4 a, F4 b) { return vmulq_f32(a, b); }
inline F4 div(F4 a, F4 b) { return vdivq_f32(a, b); }
inline F4 max(F4 a, F4 b) { return vmaxnmq_f32(a, b); }
inline F4 min(F4 a, F4 b) { return vminnmq_f32(a, b); }
inline I4 round_i(F4 a) { return vcvtnq_s32_f32(a); }
inline F4 to_f(I4 a) { return vcvtq_f32_s32(a); }
inline I4 shr1(I4 a) { return vshrq_n_s32(a, 1); }
inline I4 isub(I4 a, I4 b) { return vsubq_s32(a, b); }
inline F4 pow2(I4 n) { return vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n, vdupq_n_s32(127)), 23)); }
inline F4 swap_pairs(F4 a) { return vrev64q_f32(a); }
inline float total(F4 p) {
  return (vgetq_lane_f32(p, 0) + vgetq_lane_f32(p, 1)) + (vgetq_lane_f32(p, 2) + vgetq_lane_f32(p, 3));
}
#elif ML_F4_WASM
using F4 = v128_t;
using I4 = v128_t;
inline F4 load(const float *p) { return wasm_v128_load(p); }
inline void store(float *p, F4 v) { wasm_v128_store(p, v); }
inline F4 splat(float a) { return wasm_f32x4_splat(a); }
inline F4 add(F4 a, F4 b) { return wasm_f32x4_add(a, b); }
inline F4 sub(F4 a, F4 b) { return wasm_f32x4_sub(a, b); }
inline F4 mul(F4 a, F4 b) { return wasm_f32x4_mul(a, b); }
inline F4 div(F4 a, F4 b) { return wasm_f32x4_div(a, b); }
inline F4 max(F4 a, F4 b) { return wasm_f32x4_pmax(b, a); }  // b < a ? a : b
inline F4 min(F4 a, F4 b) { return wasm_f32x4_pmin(b, a); }  // a < b ? a : b
inline I4 round_i(F4 a) { return wasm_i32x4_trunc_sat_f32x4(wasm_f32x4_nearest(a)); }
inline F4 to_f(I4 a) { return wasm_f32x4_convert_i32x4(a); }
inline I4 shr1(I4 a) { return wasm_i32x4_shr(a, 1); }
inline I4 isub(I4 a, I4 b) { return wasm_i32x4_sub(a, b); }
inline F4 pow2(I4 n) { return wasm_i32x4_shl(wasm_i32x4_add(n, wasm_i32x4_splat(127)), 23); }
inline F4 swap_pairs(F4 a) { return wasm_i32x4_shuffle(a, a, 1, 0, 3, 2); }
inline float total(F4 p) {
  return (wasm_f32x4_extract_lane(p, 0) + wasm_f32x4_extract_lane(p, 1)) +
         (wasm_f32x4_extract_lane(p, 2) + wasm_f32x4_extract_lane(p, 3));
}
#elif ML_F4_RVV
using F4 = vfloat32m1_t;
using I4 = vint32m1_t;
inline F4 load(const float *p) { return __riscv_vle32_v_f32m1(p, 4); }
inline void store(float *p, F4 v) { __riscv_vse32_v_f32m1(p, v, 4); }
inline F4 splat(float a) { return __riscv_vfmv_v_f_f32m1(a, 4); }
inline F4 add(F4 a, F4 b) { return __riscv_vfadd_vv_f32m1(a, b, 4); }
inline F4 sub(F4 a, F4 b) { return __riscv_vfsub_vv_f32m1(a, b, 4); }
inline F4 mul(F4 a, F4 b) { return __riscv_vfmul_vv_f32m1(a, b, 4); }
inline F4 div(F4 a, F4 b) { return __riscv_vfdiv_vv_f32m1(a, b, 4); }
inline F4 max(F4 a, F4 b) { return __riscv_vfmax_vv_f32m1(a, b, 4); }
inline F4 min(F4 a, F4 b) { return __riscv_vfmin_vv_f32m1(a, b, 4); }
inline I4 round_i(F4 a) { return __riscv_vfcvt_x_f_v_i32m1(a, 4); }  // frm: nearest-even by default
inline F4 to_f(I4 a) { return __riscv_vfcvt_f_x_v_f32m1(a, 4); }
inline I4 shr1(I4 a) { return __riscv_vsra_vx_i32m1(a, 1, 4); }
inline I4 isub(I4 a, I4 b) { return __riscv_vsub_vv_i32m1(a, b, 4); }
inline F4 pow2(I4 n) {
  return __riscv_vreinterpret_v_i32m1_f32m1(__riscv_vsll_vx_i32m1(__riscv_vadd_vx_i32m1(n, 127, 4), 23, 4));
}
inline F4 swap_pairs(F4 a) {  // lane i takes lane i ^ 1
  return __riscv_vrgather_vv_f32m1(a, __riscv_vxor_vx_u32m1(__riscv_vid_v_u32m1(4), 1, 4), 4);
}
inline float total(F4 p) {
  float t[4];
  store(t, p);
  return (t[0] + t[1]) + (t[2] + t[3]);
}
#else
struct F4 {
  float v[4];
};
struct I4 {
  int32_t v[4];
};
template <class R, class T, class Op>
inline R lanes(const T &a, const T &b, Op op) {
  R r;
  for (int i = 0; i < 4; ++i) r.v[i] = op(a.v[i], b.v[i]);
  return r;
}
inline F4 load(const float *p) { return F4{{p[0], p[1], p[2], p[3]}}; }
inline void store(float *p, F4 v) { std::memcpy(p, v.v, sizeof v.v); }
inline F4 splat(float a) { return F4{{a, a, a, a}}; }
inline F4 add(F4 a, F4 b) { return lanes<F4>(a, b, [](float x, float y) { return x + y; }); }
inline F4 sub(F4 a, F4 b) { return lanes<F4>(a, b, [](float x, float y) { return x - y; }); }
inline F4 mul(F4 a, F4 b) { return lanes<F4>(a, b, [](float x, float y) { return x * y; }); }
inline F4 div(F4 a, F4 b) { return lanes<F4>(a, b, [](float x, float y) { return x / y; }); }
inline F4 max(F4 a, F4 b) { return lanes<F4>(a, b, [](float x, float y) { return std::fmax(x, y); }); }
inline F4 min(F4 a, F4 b) { return lanes<F4>(a, b, [](float x, float y) { return std::fmin(x, y); }); }
inline I4 round_i(F4 a) { return lanes<I4>(a, a, [](float x, float) { return int32_t(std::nearbyint(x)); }); }
inline F4 to_f(I4 a) { return lanes<F4>(a, a, [](int32_t x, int32_t) { return float(x); }); }
inline I4 shr1(I4 a) { return lanes<I4>(a, a, [](int32_t x, int32_t) { return x >> 1; }); }
inline I4 isub(I4 a, I4 b) { return lanes<I4>(a, b, [](int32_t x, int32_t y) { return x - y; }); }
inline F4 pow2(I4 n) {
  return lanes<F4>(n, n, [](int32_t x, int32_t) {
    const uint32_t b = uint32_t(x + 127) << 23;
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  });
}
inline F4 swap_pairs(F4 a) { return F4{{a.v[1], a.v[0], a.v[3], a.v[2]}}; }
inline float total(F4 p) { return (p.v[0] + p.v[1]) + (p.v[2] + p.v[3]); }
#endif

// The first n (< 4) floats at p, zero-padded, without reading past p + n; and the store of n lanes.
inline F4 load_n(const float *p, int n) {
  float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  std::memcpy(t, p, sizeof(float) * static_cast<size_t>(n));
  return load(t);
}
inline void store_n(float *p, F4 v, int n) {
  float t[4];
  store(t, v);
  std::memcpy(p, t, sizeof(float) * static_cast<size_t>(n));
}

}  // namespace ml::f4
