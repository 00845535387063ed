# RISC-V tests (rv64 and rvv presets; included by cmake/Tests.cmake). Every test binary already runs
# under the preset's CMAKE_CROSSCOMPILING_EMULATOR (qemu-riscv64: plain rv64 for rv64, RVV 1.0 with
# VLEN 256 for rvv, the SpaceMiT X60's length); this file adds what needs other emulated CPUs:
#   guard.*          the CPU guard: the rvv build on a CPU without V (plain -cpu rv64) prints one
#                    line naming V and exits with ML_E_ISA's status, never SIGILL; the rv64 build
#                    prints llama2.c's stories260K text on a real rv64gc core model (SiFive U54)
#   <test>.vlen<N>   rvv: the kernel group (every variant against scalar, both layouts, bit for bit)
#                    and the golden text (the F32 forward) again at VLEN 128 and 512: one build,
#                    three vector lengths
#   logits.*         quantized stories260K and random GQA models, both layouts: ml_run's logits of
#                    48 positions are bit-identical to its --reference run (the scalar kernels):
#                    rv64 logits.identical; rvv logits.vlen at VLEN 256, 128 and 512, where the F32
#                    models (matvec_f32 may reassociate) must also be bit-identical across the three
#                    lengths: the same results at every length
# Not repeated per VLEN: the random-model and panel-layout forward groups (their quantized
# forwards are logits.vlen's models, their F32 forward is the golden text's), the thread-count and
# prefill cases (the same kernels again). The last test runs this file in CMake script mode
# (cmake -P, below).

if(CMAKE_SCRIPT_MODE_FILE)
  # cmake -DEMU=<qemu|-L|sysroot> -DCPUS=<qemu -cpu values, |-separated> -DRUN=<ml_run> -DMODELS=<dir>
  #       -DTOK=<tok512.bin> -DOUT=<dir> -P riscv.cmake
  string(REPLACE "|" ";" _emu "${EMU}")
  string(REPLACE "|" ";" _cpus "${CPUS}")
  list(LENGTH _cpus _ncpus)
  # Quantized models: every CPU against --reference. F32 models: every CPU against the first.
  set(_models stories260K_q8_0 stories260K_q4_0 stories260K_q8_0_panel16 stories260K_q4_0_panel16
              random_gqa_q8_0 random_gqa_q4_0 random_gqa_q8_0_panel16 random_gqa_q4_0_panel16)
  if(_ncpus GREATER 1)
    list(APPEND _models stories260K_f32 random_gqa_f32)
  endif()
  foreach(_f IN ITEMS "${TOK}" "${MODELS}/stories260K_q8_0.mlb")
    if(NOT EXISTS "${_f}")
      message("\n*** SKIPPED: ${_f} is absent (shared test data); see README.md\n")
      return()
    endif()
  endforeach()
  file(MAKE_DIRECTORY "${OUT}")
  # A CPU's name in messages: "VLEN 256" for rv64,v=true,vlen=256,..., else the qemu model.
  function(cpu_label out cpu)
    if(cpu MATCHES "vlen=([0-9]+)")
      set(${out} "VLEN ${CMAKE_MATCH_1}" PARENT_SCOPE)
    else()
      set(${out} "-cpu ${cpu}" PARENT_SCOPE)
    endif()
  endfunction()
  # ml_run on model m under -cpu <cpu> (more ml_run arguments after it); sets <var>_text, <var>_file.
  function(run_logits var m cpu)
    set(_file "${OUT}/${m}.${var}.f32")
    file(REMOVE "${_file}")
    execute_process(COMMAND ${_emu} -cpu "${cpu}" "${RUN}" "${MODELS}/${m}.mlb" -z "${TOK}" -n 48 --temp 0 -t 1
                            -i "Once upon a time" --logits "${_file}" ${ARGN}
                    RESULT_VARIABLE _rc OUTPUT_VARIABLE _text ERROR_VARIABLE _err)
    if(NOT _rc EQUAL 0 OR NOT EXISTS "${_file}")
      message(FATAL_ERROR "${m} (${var}, -cpu ${cpu}): ml_run failed (${_rc}): ${_err}")
    endif()
    set(${var}_text "${_text}" PARENT_SCOPE)
    set(${var}_file "${_file}" PARENT_SCOPE)
  endfunction()
  set(_failed "")
  list(GET _cpus 0 _cpu0)
  cpu_label(_label0 "${_cpu0}")
  foreach(_m IN LISTS _models)
    if(NOT EXISTS "${MODELS}/${_m}.mlb")
      list(APPEND _failed "${_m}: ${MODELS}/${_m}.mlb is missing (fixtures)")
      continue()
    endif()
    set(_f32 OFF)
    if(_m MATCHES "_f32$")
      set(_f32 ON)
      set(_against "the ${_label0} run")
      run_logits(want ${_m} "${_cpu0}")
    else()
      set(_against "the scalar reference")
      run_logits(want ${_m} "${_cpu0}" --reference)
    endif()
    file(SIZE "${want_file}" _bytes)
    set(_same "")
    set(_i 0)
    foreach(_cpu IN LISTS _cpus)
      math(EXPR _i "${_i} + 1")
      if(_f32 AND _i EQUAL 1)
        continue()
      endif()
      cpu_label(_label "${_cpu}")
      run_logits(got${_i} ${_m} "${_cpu}")
      execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${got${_i}_file}" "${want_file}" RESULT_VARIABLE _diff)
      file(SIZE "${got${_i}_file}" _got_bytes)
      if(_bytes EQUAL 0)
        list(APPEND _failed "${_m}: empty logits file")
      elseif(NOT _got_bytes EQUAL _bytes)
        list(APPEND _failed "${_m} at ${_label}: ${_got_bytes} bytes of logits, ${_bytes} expected")
      elseif(_diff)
        # The first differing float of the [positions][vocab] array, for the message: 2 KB slices,
        # then float by float within the first slice that differs.
        file(READ "${got${_i}_file}" _a HEX)
        file(READ "${want_file}" _b HEX)
        string(LENGTH "${_a}" _la)
        set(_at "?")
        foreach(_o RANGE 0 ${_la} 4096)
          string(SUBSTRING "${_a}" ${_o} 4096 _sa)
          string(SUBSTRING "${_b}" ${_o} 4096 _sb)
          if(NOT _sa STREQUAL _sb)
            foreach(_f RANGE ${_o} ${_la} 8)
              string(SUBSTRING "${_a}" ${_f} 8 _fa)
              string(SUBSTRING "${_b}" ${_f} 8 _fb)
              if(NOT _fa STREQUAL _fb)
                math(EXPR _k "${_f} / 8")
                set(_at "float ${_k}: bytes ${_fa} vs ${_fb}")
                break()
              endif()
            endforeach()
            break()
          endif()
        endforeach()
        list(APPEND _failed "${_m} at ${_label}: first difference from ${_against} at ${_at}")
      elseif(NOT got${_i}_text STREQUAL want_text)
        list(APPEND _failed "${_m} at ${_label}: same logits as ${_against}, different text")
      else()
        list(APPEND _same "${_label}")
      endif()
    endforeach()
    math(EXPR _floats "${_bytes} / 4")
    string(REPLACE ";" ", " _same "${_same}")
    message("${_m}: ${_floats} logits bit-identical to ${_against} at ${_same}")
  endforeach()
  if(_failed)
    string(REPLACE ";" "\n  " _failed "${_failed}")
    message(FATAL_ERROR "logits differ:\n  ${_failed}")
  endif()
  return()
endif()

# ---- Test registration (configure time).

# ml_riscv_logits_test(<name> <qemu -cpu values, |-separated>): the script mode above.
function(ml_riscv_logits_test name cpus)
  add_test(NAME ${name} COMMAND ${CMAKE_COMMAND} "-DEMU=${ML_QEMU}|-L|${CMAKE_FIND_ROOT_PATH}" "-DCPUS=${cpus}"
           "-DRUN=$<TARGET_FILE:ml_run>" "-DMODELS=${ML_MODELS_DIR}" "-DTOK=${ML_SHARED_DIR}/models/stories260K/tok512.bin"
           "-DOUT=${CMAKE_BINARY_DIR}/logits" -P "${CMAKE_CURRENT_LIST_FILE}")
  set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED "stories260K;random" SKIP_REGULAR_EXPRESSION "\\*\\*\\* SKIPPED")
endfunction()

if(ML_ISA STREQUAL "rv64")
  ml_qemu_cpu(_u54 sifive-u54)
  ml_guard_test(guard.sifive-u54 golden ${_u54})  # a real rv64gc core (HiFive Unleashed): the floor
  ml_riscv_logits_test(logits.identical rv64)
elseif(ML_ISA STREQUAL "rvv")
  ml_qemu_cpu(_rv64 rv64)
  ml_guard_test(guard.rv64-without-v refuse ${_rv64})  # rv64gc, no vector unit
  foreach(_vl 128 512)
    ml_qemu_cpu(_emu rv64,v=true,vlen=${_vl},vext_spec=v1.0)
    ml_test_group(kernels.vlen${_vl} "[kernels]" EMULATOR "${_emu}")
    ml_guard_test(golden.vlen${_vl} golden ${_emu})
  endforeach()
  ml_riscv_logits_test(logits.vlen
    "rv64,v=true,vlen=256,vext_spec=v1.0|rv64,v=true,vlen=128,vext_spec=v1.0|rv64,v=true,vlen=512,vext_spec=v1.0")
endif()
