// The AArch64 NEON binary16 → F32 widening (fcvtl), for kernels/format/f16.h (which includes it on
// AArch64 builds and wraps it: include that header, not this one). The same bits as the integer
// reference, f32_from_f16, for every half (verify/e2e_checks.cc checks all 65536). ARMv7 NEON has
// no half conversion in its baseline: those builds take the portable widen16_int.
//   widen16(dst, src)       16 halves → 16 floats (a panel's block scales in layout 2); always
//                           true (the contract of kernels/x86/f16_x86.h's: false = not handled).
//   load_f16(dst, src, n)   converts the leading halves 4 at a time and returns their count: the
//                           caller converts the rest with the integer reference.
// No alignment needed.
#pragma once
#include <arm_neon.h>

#include <cstdint>

namespace ml::f16_isa {

namespace {  // internal linkage, like the x86 helper's (one copy per ISA's kernels)
inline bool widen16(float *dst, const uint16_t *src) {
  for (int i = 0; i < 16; i += 4) vst1q_f32(dst + i, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(src + i))));
  return true;
}
}  // namespace

inline int load_f16(float *dst, const uint16_t *src, int n) {
  int i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(dst + i, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(src + i))));
  return i;
}

}  // namespace ml::f16_isa
