# Kernels of the sse2 set built from .S files when configured with -DML_ASM=ON (CMakeLists.txt):
# each name K here means K.S provides ml_k_K_sse2 and the C++ definition is compiled out
# (ML_ASM_K_sse2). The same kernel tests cover it.
set(ML_ASM_KERNELS add)
