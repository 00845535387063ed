// sse41 override: matvec_q8, matvec_q4, matmul_q8, matmul_q4 at 128 bits with SSSE3's byte
// multiply: pmaddubsw (|w|·sign(x, w), or nibble·x) → pmaddwd(·, 1) → int32 (Maddubs<V128>).
// Everything else — panels, rows, float order — is kernels/x86/quant_x86.h (bit-identical to
// kernels/scalar/matvec.cc; tests: verify/kernel_checks.cc).
// Defines: ml_k_matvec_q8_sse41 ml_k_matvec_q4_sse41 ml_k_matmul_q8_sse41 ml_k_matmul_q4_sse41 ml_k_peak_sse41
#include "kernels/x86/quant_x86.h"

namespace {
using namespace ml::x86;
using Sse41 = Maddubs<V128>;
}  // namespace

ML_PANEL_KERNELS(sse41, Width<Sse41>, PanelInt<Sse41>, Rows<Sse41>::q8, Rows<Sse41>::q4)
