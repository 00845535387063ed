// avx512vnni override: matvec_q8, matvec_q4, matmul_q8, matmul_q4 with vpdpbusd at 512 bits
// (Vnni<V512>), the same offset as kernels/x86/avxvnni/matvec.cc. A panel's 16 rows are one zmm
// register, so a block's weights stay in 8 registers for 4 tokens of matmul; rows put two blocks in
// a register. Everything else — panels, rows, float order — is kernels/x86/quant_x86.h
// (bit-identical to kernels/scalar/matvec.cc; tests: verify/kernel_checks.cc).
// Defines: ml_k_matvec_q8_avx512vnni ml_k_matvec_q4_avx512vnni ml_k_matmul_q8_avx512vnni ml_k_matmul_q4_avx512vnni ml_k_peak_avx512vnni
#include "kernels/x86/quant_x86.h"

namespace {
using namespace ml::x86;
using Avx512Vnni = Vnni<V512>;
}  // namespace

ML_PANEL_KERNELS(avx512vnni, Width<Avx512Vnni>, PanelInt<Avx512Vnni>, Rows<Avx512Vnni>::q8, Rows<Avx512Vnni>::q4)
