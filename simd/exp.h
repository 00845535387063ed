// legacy-ml's exp: one algorithm, bit-identical on every ISA (only IEEE operations and an exact
// exponent construction), so softmax and silu give the same bits everywhere. exp_scalar() below is
// the reference; simd/exp-inl.h (Highway targets) and simd/f32x4_math.h (the 4-lane layer) vectorize it.
//   x clamped to [kExpLo, kExpHi];  n = round(x · log2 e);  r = x − n·ln2_hi − n·ln2_lo  (|r| ≤ ln2/2)
//   p = 1 + r + r²/2! + … + r⁶/6!   (Horner; truncation error ≤ r⁷/7! < 1.2e-7 relative)
//   exp(x) = p · 2^(n>>1) · 2^(n − (n>>1))   (two exponent multiplies reach 2^-150 … 2^128: denormal
//                                            results come out right and x > 88.72 gives +inf)
// Accuracy: relative error ≤ 1e-6 against the true exp on [−88, 88] (verify/kernel_checks.cc,
// "exp accuracy"); the spec's bound for SIMD exp. The round-to-nearest-even of n is rintf / the
// SIMD round instructions in the default rounding mode.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace ml::simd {

inline constexpr float kExpHi = 88.8f;
inline constexpr float kExpLo = -104.0f;
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f;       // exact in 10 bits: n·kLn2Hi is exact
inline constexpr float kLn2Lo = -2.12194440e-4f;    // ln 2 − kLn2Hi
inline constexpr float kExpC2 = 1.0f / 2.0f;
inline constexpr float kExpC3 = 1.0f / 6.0f;
inline constexpr float kExpC4 = 1.0f / 24.0f;
inline constexpr float kExpC5 = 1.0f / 120.0f;
inline constexpr float kExpC6 = 1.0f / 720.0f;

inline float exp_scalar(float x) {
  x = std::fmin(std::fmax(x, kExpLo), kExpHi);
  const float n = std::nearbyint(x * kLog2e);
  float r = x - n * kLn2Hi;
  r = r - n * kLn2Lo;
  float p = kExpC6;
  p = p * r + kExpC5;
  p = p * r + kExpC4;
  p = p * r + kExpC3;
  p = p * r + kExpC2;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int32_t ni = static_cast<int32_t>(n), n1 = ni >> 1, n2 = ni - n1;
  const uint32_t b1 = static_cast<uint32_t>(n1 + 127) << 23, b2 = static_cast<uint32_t>(n2 + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &b1, 4);
  std::memcpy(&s2, &b2, 4);
  return (p * s1) * s2;
}

}  // namespace ml::simd
