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
// Each backend is one row of ML_F4_BACKEND: its types and an expression per op.
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

// A backend: its two vector types and every op as an expression of the op's operands
// (p: pointer, v: F4 to store, s: float, a, b: F4 or I4, n: I4).
#define ML_F4_BACKEND(F, I, LOAD, STORE, SPLAT, ADD, SUB, MUL, DIV, MAX, MIN, ROUND_I, TO_F, SHR1, ISUB, POW2, SWAP) \
  using F4 = F;                                                                \
  using I4 = I;                                                                \
  inline F4 load(const float *p) { return LOAD; }                              \
  inline void store(float *p, F4 v) { STORE; }                                 \
  inline F4 splat(float s) { return SPLAT; }                                   \
  inline F4 add(F4 a, F4 b) { return ADD; }                                    \
  inline F4 sub(F4 a, F4 b) { return SUB; }                                    \
  inline F4 mul(F4 a, F4 b) { return MUL; }                                    \
  inline F4 div(F4 a, F4 b) { return DIV; }                                    \
  inline F4 max(F4 a, F4 b) { return MAX; }                                    \
  inline F4 min(F4 a, F4 b) { return MIN; }                                    \
  inline I4 round_i(F4 a) { return ROUND_I; }                                  \
  inline F4 to_f(I4 a) { return TO_F; }                                        \
  inline I4 shr1(I4 a) { return SHR1; }                                        \
  inline I4 isub(I4 a, I4 b) { return ISUB; }                                  \
  inline F4 pow2(I4 n) { return POW2; }                                        \
  inline F4 swap_pairs(F4 a) { return SWAP; }

#if ML_F4_SSE2  // max/min: b where a is NaN; cvtps rounds in the MXCSR mode (nearest-even by default)
ML_F4_BACKEND(__m128, __m128i, _mm_loadu_ps(p), _mm_storeu_ps(p, v), _mm_set1_ps(s), _mm_add_ps(a, b),
              _mm_sub_ps(a, b), _mm_mul_ps(a, b), _mm_div_ps(a, b), _mm_max_ps(a, b), _mm_min_ps(a, b),
              _mm_cvtps_epi32(a), _mm_cvtepi32_ps(a), _mm_srai_epi32(a, 1), _mm_sub_epi32(a, b),
              _mm_castsi128_ps(_mm_slli_epi32(_mm_add_epi32(n, _mm_set1_epi32(127)), 23)),
              _mm_shuffle_ps(a, a, _MM_SHUFFLE(2, 3, 0, 1)))
#elif ML_F4_NEON  // maxnm/minnm: the non-NaN operand; vcvtnq: nearest-even
ML_F4_BACKEND(float32x4_t, int32x4_t, vld1q_f32(p), vst1q_f32(p, v), vdupq_n_f32(s), vaddq_f32(a, b),
              vsubq_f32(a, b), vmulq_f32(a, b), vdivq_f32(a, b), vmaxnmq_f32(a, b), vminnmq_f32(a, b),
              vcvtnq_s32_f32(a), vcvtq_f32_s32(a), vshrq_n_s32(a, 1), vsubq_s32(a, b),
              vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n, vdupq_n_s32(127)), 23)), vrev64q_f32(a))
#elif ML_F4_WASM  // pmax(b, a) = b < a ? a : b, so b where a is NaN (likewise pmin)
ML_F4_BACKEND(v128_t, v128_t, wasm_v128_load(p), wasm_v128_store(p, v), wasm_f32x4_splat(s),
              wasm_f32x4_add(a, b), wasm_f32x4_sub(a, b), wasm_f32x4_mul(a, b), wasm_f32x4_div(a, b),
              wasm_f32x4_pmax(b, a), wasm_f32x4_pmin(b, a), wasm_i32x4_trunc_sat_f32x4(wasm_f32x4_nearest(a)),
              wasm_f32x4_convert_i32x4(a), wasm_i32x4_shr(a, 1), wasm_i32x4_sub(a, b),
              wasm_i32x4_shl(wasm_i32x4_add(n, wasm_i32x4_splat(127)), 23), wasm_i32x4_shuffle(a, a, 1, 0, 3, 2))
#elif ML_F4_RVV  // vl = 4; vfmax/vfmin: the non-NaN operand; vfcvt.x.f: frm, nearest-even by default
ML_F4_BACKEND(vfloat32m1_t, vint32m1_t, __riscv_vle32_v_f32m1(p, 4), __riscv_vse32_v_f32m1(p, v, 4),
              __riscv_vfmv_v_f_f32m1(s, 4), __riscv_vfadd_vv_f32m1(a, b, 4), __riscv_vfsub_vv_f32m1(a, b, 4),
              __riscv_vfmul_vv_f32m1(a, b, 4), __riscv_vfdiv_vv_f32m1(a, b, 4), __riscv_vfmax_vv_f32m1(a, b, 4),
              __riscv_vfmin_vv_f32m1(a, b, 4), __riscv_vfcvt_x_f_v_i32m1(a, 4), __riscv_vfcvt_f_x_v_f32m1(a, 4),
              __riscv_vsra_vx_i32m1(a, 1, 4), __riscv_vsub_vv_i32m1(a, b, 4),
              __riscv_vreinterpret_v_i32m1_f32m1(__riscv_vsll_vx_i32m1(__riscv_vadd_vx_i32m1(n, 127, 4), 23, 4)),
              __riscv_vrgather_vv_f32m1(a, __riscv_vxor_vx_u32m1(__riscv_vid_v_u32m1(4), 1, 4), 4))
#else  // scalar lanes: each op lane by lane (fmax/fmin, nearbyint: the reference's functions)
template <class T>
struct Lanes {
  T v[4];
};
template <class R, class T, class Op>
inline Lanes<R> lanes(const Lanes<T> &a, const Lanes<T> &b, Op op) {
  return Lanes<R>{{op(a.v[0], b.v[0]), op(a.v[1], b.v[1]), op(a.v[2], b.v[2]), op(a.v[3], b.v[3])}};
}
inline float bits_to_float(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
ML_F4_BACKEND(Lanes<float>, Lanes<int32_t>, (F4{{p[0], p[1], p[2], p[3]}}), std::memcpy(p, v.v, sizeof v.v),
              (F4{{s, s, s, s}}), lanes<float>(a, b, [](float x, float y) { return x + y; }),
              lanes<float>(a, b, [](float x, float y) { return x - y; }),
              lanes<float>(a, b, [](float x, float y) { return x * y; }),
              lanes<float>(a, b, [](float x, float y) { return x / y; }),
              lanes<float>(a, b, [](float x, float y) { return std::fmax(x, y); }),
              lanes<float>(a, b, [](float x, float y) { return std::fmin(x, y); }),
              lanes<int32_t>(a, a, [](float x, float) { return int32_t(std::nearbyint(x)); }),
              lanes<float>(a, a, [](int32_t x, int32_t) { return float(x); }),
              lanes<int32_t>(a, a, [](int32_t x, int32_t) { return x >> 1; }),
              lanes<int32_t>(a, b, [](int32_t x, int32_t y) { return x - y; }),
              lanes<float>(n, n, [](int32_t x, int32_t) { return bits_to_float(uint32_t(x + 127) << 23); }),
              (F4{{a.v[1], a.v[0], a.v[3], a.v[2]}}))
#endif
#undef ML_F4_BACKEND

// (p0 + p1) + (p2 + p3): the combine of the canonical sum4 (kernels/kernels.h).
inline float total(F4 p) {
  float t[4];
  store(t, p);
  return (t[0] + t[1]) + (t[2] + t[3]);
}

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
