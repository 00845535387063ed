// Shared by the rvv override set (RISC-V Vector 1.0, clang-16 `__riscv_` intrinsics): the
// intrinsics header and the 4-lane float layer (simd/f32x4.h: vl = 4 at every VLEN; its RVV
// backend) with its math (simd/f32x4_math.h: exp, the canonical sum4, the float kernels). Every
// kernel of the set is vector-length agnostic: VLEN is anything from 128 bits up, loops take their
// vl from vsetvl, and the bits never depend on VLEN (tested at 128, 256 and 512:
// cmake/tests/riscv.cmake). RVV float arithmetic is IEEE (vfdiv, vfsqrt correctly rounded;
// denormals kept), and the intrinsics are never contracted into FMAs (-ffp-contract=off).
#pragma once
#include <riscv_vector.h>

#include <cstddef>
#include <cstdint>

#include "simd/f32x4_math.h"
