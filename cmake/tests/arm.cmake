# ARM tests (neon-v7, neon, neon-dotprod, sve presets; included by cmake/Tests.cmake). Every test
# binary already runs under the preset's CMAKE_CROSSCOMPILING_EMULATOR (qemu with a CPU model that
# has the build's features); this file adds what needs other emulated CPUs:
#   guard.<cpu>      the CPU guard on a CPU without the build's features: one line naming what is
#                    missing, ML_E_ISA's exit status, never SIGILL (verify/guard_test.py refuse);
#                    or the floor CPU a build must run on, printing llama2.c's stories260K text (golden)
#   <test>.sve<N>    sve: the kernel group (every variant against scalar, both layouts, bit for
#                    bit), the golden text (the F32 forward) and logits.identical again at 256- and
#                    128-bit vectors (the preset's own emulator runs 512-bit): one build, three
#                    lengths. Not repeated per length, as on rvv: the random-model and panel forward
#                    groups (their quantized forwards are logits.identical's models, bit for bit
#                    against the scalar kernels, their F32 forward is the golden text's)
#   logits.identical quantized stories260K and random GQA models, both layouts: ml_run's logits of
#                    48 positions are bit-identical to its --reference run (the scalar kernels;
#                    verify/logits_compare.py, registered for every preset by cmake/Tests.cmake) —
#                    for sve also at 256- and 128-bit vectors (logits.identical.sve<N>), so the
#                    results are the same at every length

if(ML_ISA STREQUAL "neon_v7")
  ml_qemu_cpu(_a7 cortex-a7)
  ml_guard_test(guard.cortex-a7 golden ${_a7})  # ARMv7 with NEON and VFPv4: the floor
  ml_qemu_cpu(_a9 cortex-a9,neon=off)      # Cortex-A9 without NEON (e.g. NVIDIA Tegra 2)
  ml_guard_test(guard.cortex-a9-no-neon refuse ${_a9})
elseif(ML_ISA STREQUAL "neon")
  ml_qemu_cpu(_a53 cortex-a53)
  ml_guard_test(guard.cortex-a53 golden ${_a53})  # ARMv8.0-A: the AArch64 floor
elseif(ML_ISA STREQUAL "neon_dotprod")
  ml_qemu_cpu(_a53 cortex-a53)
  ml_guard_test(guard.cortex-a53 refuse ${_a53})  # no dotprod (nor ARMv8.1 atomics/RDM)
elseif(ML_ISA STREQUAL "sve")
  ml_qemu_cpu(_a72 cortex-a72)
  ml_guard_test(guard.cortex-a72 refuse ${_a72})  # no SVE, no dotprod
  ml_qemu_cpu(_a64fx a64fx)
  ml_guard_test(guard.a64fx refuse ${_a64fx})     # SVE without dotprod (see simd/isa_table.h)
  # (logits.identical at the preset's 512-bit vectors: cmake/Tests.cmake)
  ml_guard_test(golden.sve512 golden ${CMAKE_CROSSCOMPILING_EMULATOR})
  foreach(_vl 256 128)
    ml_qemu_cpu(_emu max,sve${_vl}=on)
    ml_test_group(kernels.sve${_vl} "[kernels]" EMULATOR "${_emu}")
    ml_guard_test(golden.sve${_vl} golden ${_emu})
    ml_logits_test(logits.identical.sve${_vl} EMULATOR ${_emu})
  endforeach()
endif()
