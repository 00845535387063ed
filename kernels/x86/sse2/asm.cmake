# Kernels of the sse2 set built from .S files when configured with -DML_ASM=ON (CMakeLists.txt):
# each name K here means K.S provides ml_k_K_sse2 and the C++ definition is compiled out
# (ML_ASM_K_sse2). The same kernel tests cover it.
# Windows (mingw-w64, the win-* presets): none. add.S is written for the System V AMD64 ABI (y, x,
# n in rdi, rsi, edx) and ELF (.type/.size, .note.GNU-stack); Win64 passes them in rcx, rdx, r8d
# and COFF has no .type/.size. It touches only xmm0/xmm1 (volatile in both ABIs), so a port is the
# three argument registers and the directives, but a second copy of the kernel buys nothing the
# C++ f32x4.cc (the Windows build's add) does not already prove: ML_ASM stays a Linux sample.
if(WIN32)
  set(ML_ASM_KERNELS "")
else()
  set(ML_ASM_KERNELS add)
endif()
