// avxvnni override: matvec_q8, matvec_q4, matmul_q8, matmul_q4 with vpdpbusd at 256 bits
// (Vnni<V256>): unsigned by signed bytes, so Q8 weights go in offset by 128 (w ^ 0x80 = w + 128)
// and the sums start from −128·Σx; Q4 nibbles n are unsigned already (rows: n − 8 + 128 = n + 120).
// Everything else — panels, rows, float order — is kernels/x86/quant_x86.h (bit-identical to
// kernels/scalar/matvec.cc; tests: verify/kernel_checks.cc). In the avx512vnni build (AVX512-VNNI+VL
// but not AVX-VNNI) the same code uses the EVEX encoding of the 256-bit vpdpbusd (V256::dpbusd).
// Defines: ml_k_matvec_q8_avxvnni ml_k_matvec_q4_avxvnni ml_k_matmul_q8_avxvnni ml_k_matmul_q4_avxvnni ml_k_peak_avxvnni
#include "kernels/x86/quant_x86.h"

namespace {
using namespace ml::x86;
using AvxVnni = Vnni<V256>;
}  // namespace

ML_PANEL_KERNELS(avxvnni, Width<AvxVnni>, PanelInt<AvxVnni>, Rows<AvxVnni>::q8, Rows<AvxVnni>::q4)
