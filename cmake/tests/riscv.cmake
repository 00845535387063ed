# RISC-V tests (rv64 and rvv presets; included by cmake/Tests.cmake). Every test binary already runs
# under the preset's CMAKE_CROSSCOMPILING_EMULATOR (qemu-riscv64: plain rv64 for rv64, RVV 1.0 with
# VLEN 256 for rvv, the SpaceMiT X60's length; the guard tests under the other CPU models of
# simd/isa_table.h's run and refuse columns are registered by cmake/Tests.cmake); this file adds
# the vector lengths:
#   <test>.vlen<N>   rvv: the kernel group (every variant against scalar, both layouts, bit for bit)
#                    and the golden text (the F32 forward) again at VLEN 128 and 512: one build,
#                    three vector lengths
#   logits.identical quantized stories260K and random GQA models, both layouts: ml_run's logits of
#                    48 positions are bit-identical to its --reference run (the scalar kernels;
#                    verify/logits_compare.py): rv64 under its own CPU (cmake/Tests.cmake); rvv at
#                    VLEN 256, 128 and 512 in one test, where the F32 models (matvec_f32 may
#                    reassociate) must also be bit-identical across the three lengths: the same
#                    results at every length
# Not repeated per VLEN: the random-model and panel-layout forward groups (their quantized
# forwards are logits.identical's models, their F32 forward is the golden text's), the thread-count
# and prefill cases (the same kernels again).

if(ML_ISA STREQUAL "rvv")
  ml_guard_test(golden.vlen256 golden ${CMAKE_CROSSCOMPILING_EMULATOR})  # the preset's VLEN (cli is not run here)
  foreach(_vl 128 512)
    ml_qemu_cpu(_emu rv64,v=true,vlen=${_vl},vext_spec=v1.0)
    ml_test_group(kernels.vlen${_vl} "[kernels]" EMULATOR "${_emu}")
    ml_guard_test(golden.vlen${_vl} golden ${_emu})
  endforeach()
  # logits.identical: the preset's VLEN 256 first, then 128 and 512 (--also commands, '|'-joined).
  set(_also "")
  foreach(_vl 128 512)
    ml_qemu_cpu(_emu rv64,v=true,vlen=${_vl},vext_spec=v1.0)
    string(REPLACE ";" "|" _emu "${_emu}")
    list(APPEND _also "${_emu}")
  endforeach()
  ml_logits_test(logits.identical ALSO ${_also})
endif()
