// quantize_q8, rvv override set. Reference: kernels/scalar/quantize.cc (docs/mlb-format.md).
// One block of 32 floats is one register group (e32m8, vl = 32 at every VLEN >= 128):
//   amax = vfredmax(|x|) from 0 (fmax semantics: a NaN x is skipped, as std::fmax does);
//   blocks with amax < 2^-100 (or NaN) go to the reference (zero blocks: d = 0, q = 0, s = 0);
//   d = amax / 127 and id = 127 / amax in scalar IEEE arithmetic, as the reference;
//   q = x·id + copysign(0.5, x) (vfmul, then vfadd of 0.5 carrying x's sign bit: separate
//   roundings), clamped to [−127, 127] with vfmax/vfmin (a NaN goes to −127, the reference's
//   fmin(fmax(NaN, −127), 127)), then truncated (vfcvt.rtz; clamping before truncating gives the
//   same integers), narrowed to int8;
//   s = exact int32 sum of the block's q (vredsum of the int32 lanes).
// Bit-identical q, d and s at every VLEN. Tests: verify/kernel_checks.cc.
// Defines: ml_k_quantize_q8_rvv
#include "kernels/kernels.h"
#include "kernels/riscv/rvv/rvv_common.h"

extern "C" void ml_k_quantize_q8_rvv(ml_qact *out, const float *x, int k) {
  constexpr size_t vl = ML_QK;  // <= VLMAX of e32m8 (32 lanes at VLEN 128)
  const vfloat32m1_t zero_f = __riscv_vfmv_s_f_f32m1(0.0f, 1);
  const vint32m1_t zero_i = __riscv_vmv_s_x_i32m1(0, 1);
  for (int b = 0; b < k / ML_QK; ++b) {
    const float *xb = x + size_t(b) * ML_QK;
    int8_t *qb = out->q + size_t(b) * ML_QK;
    const vfloat32m8_t v = __riscv_vle32_v_f32m8(xb, vl);
    const float amax = __riscv_vfmv_f_s_f32m1_f32(__riscv_vfredmax_vs_f32m8_f32m1(__riscv_vfabs_v_f32m8(v, vl), zero_f, vl));
    if (!(amax >= ML_QUANT_TINY)) {  // a zero block (or NaN): the reference quantizes it
      ml_quantize_row_q8_0(qb, out->d + b, xb, ML_QK);
      ml_block_sums_q8(out->s + b, qb, ML_QK);
      continue;
    }
    const float id = 127.0f / amax;
    out->d[b] = amax / 127.0f;
    // copysign(0.5, x): x's sign bit | the bits of 0.5 (no constant vector to keep live)
    const vfloat32m8_t half = __riscv_vreinterpret_v_u32m8_f32m8(__riscv_vor_vx_u32m8(
        __riscv_vand_vx_u32m8(__riscv_vreinterpret_v_f32m8_u32m8(v), 0x80000000u, vl), 0x3F000000u, vl));
    vfloat32m8_t r = __riscv_vfadd_vv_f32m8(__riscv_vfmul_vf_f32m8(v, id, vl), half, vl);
    r = __riscv_vfmin_vf_f32m8(__riscv_vfmax_vf_f32m8(r, -127.0f, vl), 127.0f, vl);
    const vint32m8_t q32 = __riscv_vfcvt_rtz_x_f_v_i32m8(r, vl);
    const vint8m2_t q8 = __riscv_vncvt_x_x_w_i8m2(__riscv_vncvt_x_x_w_i16m4(q32, vl), vl);
    __riscv_vse8_v_i8m2(qb, q8, vl);
    out->s[b] = __riscv_vmv_x_s_i32m1_i32(__riscv_vredsum_vs_i32m8_i32m1(q32, zero_i, vl));
  }
  out->n = k;
}
