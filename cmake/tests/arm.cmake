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
#                    48 positions are bit-identical to its --reference run (the scalar kernels) — for
#                    sve at each vector length, so the results are the same at every length
# The last one runs this file in CMake script mode (cmake -P, below).

if(CMAKE_SCRIPT_MODE_FILE)
  # cmake -DEMU=<qemu|args|...> -DRUN=<ml_run> -DMODELS=<dir> -DTOK=<tok512.bin> -DOUT=<dir> -P arm.cmake
  string(REPLACE "|" ";" _emu "${EMU}")
  set(_models stories260K_q8_0 stories260K_q4_0 random_gqa_q8_0 random_gqa_q4_0
              stories260K_q8_0_panel16 stories260K_q4_0_panel16 random_gqa_q4_0_panel16)
  foreach(_f IN ITEMS "${TOK}" "${MODELS}/stories260K_q8_0.mlb")
    if(NOT EXISTS "${_f}")
      message("\n*** SKIPPED: ${_f} is absent (shared test data); see README.md\n")
      return()
    endif()
  endforeach()
  file(MAKE_DIRECTORY "${OUT}")
  set(_failed "")
  foreach(_m IN LISTS _models)
    foreach(_mode build reference)
      set(_extra "")
      if(_mode STREQUAL "reference")
        set(_extra --reference)
      endif()
      set(_file "${OUT}/${_m}.${_mode}.f32")
      file(REMOVE "${_file}")
      execute_process(COMMAND ${_emu} "${RUN}" "${MODELS}/${_m}.mlb" -z "${TOK}" -n 48 --temp 0 -t 2
                              -i "Once upon a time" --logits "${_file}" ${_extra}
                      RESULT_VARIABLE _rc OUTPUT_VARIABLE _text_${_mode} ERROR_VARIABLE _err)
      if(NOT _rc EQUAL 0 OR NOT EXISTS "${_file}")
        message(FATAL_ERROR "${_m} (${_mode}): ml_run failed (${_rc}): ${_err}")
      endif()
      file(READ "${_file}" _hex_${_mode} HEX)
    endforeach()
    string(LENGTH "${_hex_build}" _n)
    if(_n EQUAL 0 OR NOT _hex_build STREQUAL _hex_reference)
      # Bisect to the first differing float (8 hex digits) for the message.
      set(_lo 0)
      set(_len ${_n})
      while(_len GREATER 8)
        math(EXPR _half "(${_len} / 16) * 8")
        string(SUBSTRING "${_hex_build}" ${_lo} ${_half} _a)
        string(SUBSTRING "${_hex_reference}" ${_lo} ${_half} _b)
        if(_a STREQUAL _b)
          math(EXPR _lo "${_lo} + ${_half}")
          math(EXPR _len "${_len} - ${_half}")
        else()
          set(_len ${_half})
        endif()
      endwhile()
      math(EXPR _at "${_lo} / 8")
      string(SUBSTRING "${_hex_build}" ${_lo} 8 _a)
      string(SUBSTRING "${_hex_reference}" ${_lo} 8 _b)
      list(APPEND _failed "${_m}: first difference at float ${_at} of the [positions][vocab] array: bytes ${_a} vs ${_b}")
    elseif(NOT _text_build STREQUAL _text_reference)
      list(APPEND _failed "${_m}: same logits, different text")
    else()
      math(EXPR _floats "${_n} / 8")
      message("${_m}: ${_floats} logits bit-identical to the scalar reference")
    endif()
  endforeach()
  if(_failed)
    string(REPLACE ";" "\n  " _failed "${_failed}")
    message(FATAL_ERROR "logits differ from the scalar reference (${EMU}):\n  ${_failed}")
  endif()
  return()
endif()

# ---- Test registration (configure time).

# ml_arm_logits_test(<name> <emulator list>)
function(ml_arm_logits_test name emu)
  string(REPLACE ";" "|" _emu "${emu}")
  add_test(NAME ${name} COMMAND ${CMAKE_COMMAND} "-DEMU=${_emu}" "-DRUN=$<TARGET_FILE:ml_run>" "-DMODELS=${ML_MODELS_DIR}"
           "-DTOK=${ML_SHARED_DIR}/models/stories260K/tok512.bin" "-DOUT=${CMAKE_BINARY_DIR}/logits/${name}"
           -P "${CMAKE_CURRENT_LIST_FILE}")
  set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED "stories260K;random" SKIP_REGULAR_EXPRESSION "\\*\\*\\* SKIPPED")
endfunction()

if(ML_ISA STREQUAL "neon_v7")
  ml_qemu_cpu(_a7 cortex-a7)
  ml_guard_test(guard.cortex-a7 golden ${_a7})  # ARMv7 with NEON and VFPv4: the floor
  ml_qemu_cpu(_a9 cortex-a9,neon=off)      # Cortex-A9 without NEON (e.g. NVIDIA Tegra 2)
  ml_guard_test(guard.cortex-a9-no-neon refuse ${_a9})
  ml_arm_logits_test(logits.identical "${CMAKE_CROSSCOMPILING_EMULATOR}")
elseif(ML_ISA STREQUAL "neon")
  ml_qemu_cpu(_a53 cortex-a53)
  ml_guard_test(guard.cortex-a53 golden ${_a53})  # ARMv8.0-A: the AArch64 floor
  ml_arm_logits_test(logits.identical "${CMAKE_CROSSCOMPILING_EMULATOR}")
elseif(ML_ISA STREQUAL "neon_dotprod")
  ml_qemu_cpu(_a53 cortex-a53)
  ml_guard_test(guard.cortex-a53 refuse ${_a53})  # no dotprod (nor ARMv8.1 atomics/RDM)
  ml_arm_logits_test(logits.identical "${CMAKE_CROSSCOMPILING_EMULATOR}")
elseif(ML_ISA STREQUAL "sve")
  ml_qemu_cpu(_a72 cortex-a72)
  ml_guard_test(guard.cortex-a72 refuse ${_a72})  # no SVE, no dotprod
  ml_qemu_cpu(_a64fx a64fx)
  ml_guard_test(guard.a64fx refuse ${_a64fx})     # SVE without dotprod (see simd/isa_table.h)
  ml_arm_logits_test(logits.identical.sve512 "${CMAKE_CROSSCOMPILING_EMULATOR}")
  foreach(_vl 256 128)
    ml_qemu_cpu(_emu max,sve${_vl}=on)
    ml_test_group(kernels.sve${_vl} "[kernels]" EMULATOR "${_emu}")
    # The random-model forward against scalar (F32 included: matvec_f32 sums depend on VL) and on
    # panels; by name (the group's thread and prefill cases do not depend on VL). -w NoTests fails
    # the test if a renamed case stops matching.
    ml_test_group(e2e.random.sve${_vl} "ISA forward vs scalar forward: random*" EMULATOR "${_emu}" FIXTURES random)
    ml_test_group(e2e.panels.sve${_vl} "16-row panels*" EMULATOR "${_emu}" FIXTURES random)
    ml_guard_test(golden.sve${_vl} golden ${_emu})
    ml_arm_logits_test(logits.identical.sve${_vl} "${_emu}")
  endforeach()
endif()
