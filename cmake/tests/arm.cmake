# ARM tests (neon-v7, neon, neon-dotprod, sve presets; included by cmake/Tests.cmake). Every test
# binary already runs under the preset's CMAKE_CROSSCOMPILING_EMULATOR (qemu with a CPU model that
# has the build's features); this file adds what needs other emulated CPUs:
#   guard.<cpu>      the CPU guard on a CPU without the build's features: one line naming what is
#                    missing, ML_E_ISA's exit status, never SIGILL (verify/guard_test.py refuse);
#                    or the floor CPU a build must run on, printing llama2.c's stories260K text (golden)
#   <test>.sve<N>    sve: the kernel group, the random-model forward against scalar (both layouts)
#                    and the golden text again at 256- and 128-bit vectors (the preset's own
#                    emulator runs 512-bit), one build, three lengths (stories260K's quantized
#                    forward is covered bit for bit by logits.identical at each length)
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
  foreach(_vl 256 128)
    ml_qemu_cpu(_emu max,sve${_vl}=on)
    ml_test_group(kernels.sve${_vl} "[kernels]" EMULATOR "${_emu}")
    # The random-model forward against scalar (F32 included: matvec_f32 sums depend on VL) and on
    # panels; by name (the group's thread and prefill cases do not depend on VL). -w NoTests fails
    # the test if a renamed case stops matching.
    ml_test_group(e2e.random.sve${_vl} "ISA forward vs scalar forward: random*" EMULATOR "${_emu}" FIXTURES random)
    ml_test_group(e2e.panels.sve${_vl} "16-row panels*" EMULATOR "${_emu}" FIXTURES random)
    ml_guard_test(golden.sve${_vl} golden ${_emu})
    ml_logits_test(logits.identical.sve${_vl} EMULATOR ${_emu})
  endforeach()
endif()
