# x86 tests: the CPU guard under qemu-x86_64 CPU models without the build's features (it must
# refuse with one line and ML_E_ISA's status, never SIGILL), and the build running llama2.c's
# golden text on the oldest CPU model it supports. qemu-x86_64 7.2 models: qemu64 (SSE2, SSE3),
# Nehalem (SSE4.2, no AVX), SandyBridge (AVX, no AVX2), Haswell (AVX2, no AVX-512, no AVX-VNNI).
# TOOLCHAIN.md; the host CPU runs every x86 build natively.
find_program(ML_QEMU_X86 qemu-x86_64)
if(NOT ML_QEMU_X86)
  add_test(NAME guard.qemu_missing COMMAND ${CMAKE_COMMAND} -E echo
           "qemu-x86_64 not found: the CPU-guard tests cannot run (tools/setup.sh --all installs qemu-user)")
  set_tests_properties(guard.qemu_missing PROPERTIES WILL_FAIL ON)  # a visible failure, not a skip
  return()
endif()
set(_qx ${ML_QEMU_X86} -cpu)
if(ML_ISA STREQUAL "scalar" OR ML_ISA STREQUAL "sse2")
  ml_guard_test(guard.golden_on_qemu64 golden ${_qx} qemu64)  # the x86-64 v1 floor
elseif(ML_ISA STREQUAL "sse41")
  ml_guard_test(guard.refuses_qemu64 refuse ${_qx} qemu64)
  ml_guard_test(guard.golden_on_nehalem golden ${_qx} Nehalem)
elseif(ML_ISA STREQUAL "avx2")
  ml_guard_test(guard.refuses_sandybridge refuse ${_qx} SandyBridge)
  ml_guard_test(guard.golden_on_haswell golden ${_qx} Haswell)
elseif(ML_ISA STREQUAL "avxvnni" OR ML_ISA STREQUAL "avx512vnni")
  ml_guard_test(guard.refuses_haswell refuse ${_qx} Haswell)
endif()
