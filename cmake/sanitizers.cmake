# Sanitized builds (cmake/presets/sanitizers.json). Included from CMakeLists.txt before any
# target is defined, so every translation unit, library and program gets the flags.
#
#   ML_SANITIZE   a -fsanitize= list: address (ASan + LeakSanitizer), undefined (UBSan), both
#                 (address,undefined), or thread (TSan, alone). Every report is fatal
#                 (-fno-sanitize-recover=all), so a finding fails the test that triggered it.
#                 CI's workflows: sanitize-avx2 (ASan+UBSan, AVX2), fuzz (ASan+UBSan, scalar,
#                 libFuzzer), tsan (TSan, AVX2: the tests that run the thread pool).
#   ML_FUZZ       also instrument for libFuzzer (-fsanitize=fuzzer-no-link; needs clang) and build
#                 the fuzzers (cmake/fuzz.cmake).
set(ML_SANITIZE "" CACHE STRING "sanitizers for every target: address, undefined, address,undefined or thread")
option(ML_FUZZ "build the libFuzzer targets of fuzz/ (clang)" OFF)

if(ML_FUZZ AND NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "ML_FUZZ=ON needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++ "
                      "-DCMAKE_C_COMPILER=clang, or use the fuzz preset")
endif()

if(ML_SANITIZE)
  string(REPLACE "," ";" _ml_san_list "${ML_SANITIZE}")
  foreach(_s IN LISTS _ml_san_list)
    if(NOT _s MATCHES "^(address|undefined|thread)$")
      message(FATAL_ERROR "ML_SANITIZE=${ML_SANITIZE}: use address, undefined, address,undefined or thread")
    endif()
  endforeach()
  # Debug information: line tables only (clang -gline-tables-only, GCC -g1), after the build type's
  # -g, so that the last one wins. A report's stack still names every function, inlined frames
  # included, with file:line:column; what is left out (variables and types, for a debugger) made
  # the objects 1.7-2x larger and cost 2-20 % of a compile (sanitize-avx2, 2026-12-06: ml_server.cc
  # 11.2 -> 11.0 s of CPU, test_chat_tools.cc 17.2 -> 15.4 s, gguf_model.cc 4.0 -> 3.2 s; its cold
  # build 408 -> 395 s).
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    set(_ml_san_debug -gline-tables-only)
  else()
    set(_ml_san_debug -g1)
  endif()
  set(_ml_san_flags -fsanitize=${ML_SANITIZE} -fno-sanitize-recover=all -fno-omit-frame-pointer ${_ml_san_debug})
  add_compile_options(${_ml_san_flags})
  add_link_options(-fsanitize=${ML_SANITIZE})
  message(STATUS "legacy-ml: sanitizers: ${ML_SANITIZE}")
endif()

if(ML_FUZZ)
  add_compile_options(-fsanitize=fuzzer-no-link)
  message(STATUS "legacy-ml: libFuzzer instrumentation on")
endif()
