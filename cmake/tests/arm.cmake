# ARM tests (neon-v7, neon, neon-dotprod, sve presets; included by cmake/Tests.cmake). Every test
# binary already runs under the preset's CMAKE_CROSSCOMPILING_EMULATOR (qemu with a CPU model that
# has the build's features; the guard tests under the other CPU models of simd/isa_table.h's run
# and refuse columns are registered by cmake/Tests.cmake); this file adds the vector lengths:
#   <test>.sve<N>    sve: the kernel group (every variant against scalar, both layouts, bit for
#                    bit), the golden text (the F32 forward) and logits.identical again at 256- and
#                    512-bit vectors (the preset's own emulator, which runs the whole suite, has
#                    128-bit vectors): one build, three lengths. The whole suite runs at 128 bits
#                    because qemu 7.2 runs 256- and 512-bit SVE code 5-10x slower (F32 forward of
#                    random_gqa_f32: 4.4 s at 128 bits, 26 s at 256 and 512) and, in the e2e
#                    groups, slows the scalar reference that runs after it in the same thread
#                    ~25x (2 s -> 48-52 s; measured 2026-12-02). Not repeated per length, as on rvv:
#                    the random-model and panel forward groups (their quantized forwards are
#                    logits.identical's models, bit for bit against the scalar kernels, their F32
#                    forward is the golden text's)
#   logits.identical quantized stories260K and random GQA models, both layouts: ml_run's logits of
#                    48 positions are bit-identical to its --reference run (the scalar kernels;
#                    verify/logits_compare.py, registered for every preset by cmake/Tests.cmake) —
#                    for sve also at 256- and 512-bit vectors (logits.identical.sve<N>), so the
#                    results are the same at every length

if(ML_ISA STREQUAL "sve")
  # (logits.identical at the preset's 128-bit vectors: cmake/Tests.cmake)
  ml_guard_test(golden.sve128 golden ${CMAKE_CROSSCOMPILING_EMULATOR})
  foreach(_vl 256 512)
    ml_qemu_cpu(_emu max,sve${_vl}=on)
    ml_test_group(kernels.sve${_vl} "[kernels]" EMULATOR "${_emu}")
    ml_guard_test(golden.sve${_vl} golden ${_emu})
    ml_logits_test(logits.identical.sve${_vl} EMULATOR ${_emu})
  endforeach()
endif()
