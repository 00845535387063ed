// avx2 override: matvec_q8, matvec_q4, matmul_q8, matmul_q4 at 256 bits: vpmaddubsw (|w|·sign(x, w),
// or nibble·x) → vpmaddwd(·, 1) → int32 (Maddubs<V256>). Everything else — panels, rows, float
// order — is kernels/x86/quant_x86.h (bit-identical to kernels/scalar/matvec.cc; tests:
// verify/kernel_checks.cc). The float part multiplies then adds: a fused multiply-add would change
// the bits (kernels/kernels.h).
// Defines: ml_k_matvec_q8_avx2 ml_k_matvec_q4_avx2 ml_k_matmul_q8_avx2 ml_k_matmul_q4_avx2 ml_k_peak_avx2
#include "kernels/x86/quant_x86.h"

namespace {
using namespace ml::x86;
using Avx2 = Maddubs<V256>;
}  // namespace

ML_PANEL_KERNELS(avx2, Width<Avx2>, PanelInt<Avx2>, Rows<Avx2>::q8, Rows<Avx2>::q4)
