# Fuzz targets (fuzz/): the corpus replay tests in every sanitized build, and with ML_FUZZ=ON the
# libFuzzer programs and their bounded CI runs (cmake/presets/sanitizers.json; fuzz/README.md).
# Included from CMakeLists.txt when ML_SANITIZE or ML_FUZZ is set.
#
#   fuzz_<t>_replay   each target's LLVMFuzzerTestOneInput behind a replay main (fuzz/replay_main.cc)
#   fuzz_<t>          the libFuzzer program (ML_FUZZ)
# Tests:
#   fuzz.corpus              fuzz/gen_corpus.py --check: the committed seeds are what the script writes
#   fuzz.replay.<t>          every seed (ok-* accepted, bad-* rejected) and every regression input
#   fuzz.run.<t>             (ML_FUZZ) fuzz/run_fuzz.py: ML_FUZZ_SECONDS of libFuzzer from the seeds;
#                            fails on any crash, leak, timeout or out-of-memory, printing execs/cov/ft
enable_testing()

set(ML_FUZZ_SECONDS 30 CACHE STRING "seconds each fuzz.run.<target> test runs libFuzzer (CI: 7 targets at 2 a time; longer by hand: -DML_FUZZ_SECONDS=600)")
set(ML_FUZZ_TARGETS mlb eval tokenizer encode chat gguf request)
# Seed corpus folder (fuzz/corpus/<folder>) and libFuzzer -max_len of each target.
set(_ml_fuzz_corpus_mlb mlb)
set(_ml_fuzz_corpus_eval mlb)
set(_ml_fuzz_corpus_tokenizer tokenizer)
set(_ml_fuzz_corpus_encode encode)
set(_ml_fuzz_corpus_chat chat)
set(_ml_fuzz_corpus_gguf gguf)
set(_ml_fuzz_corpus_request request)
set(_ml_fuzz_maxlen_mlb 32768)
set(_ml_fuzz_maxlen_eval 16384)
set(_ml_fuzz_maxlen_tokenizer 8192)
set(_ml_fuzz_maxlen_encode 4096)
set(_ml_fuzz_maxlen_chat 4096)
set(_ml_fuzz_maxlen_gguf 65536)
set(_ml_fuzz_maxlen_request 8192)

# The encode target's tokenizer, compiled in as a byte list (regenerated when the .bin changes).
set(_tok_bin "${PROJECT_SOURCE_DIR}/fuzz/data/encode_tokenizer.bin")
set(_gen_dir "${CMAKE_BINARY_DIR}/fuzz_gen")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_tok_bin}")
file(READ "${_tok_bin}" _hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _hex "${_hex}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n" _hex "${_hex}")
file(CONFIGURE OUTPUT "${_gen_dir}/fuzz_encode_tokenizer.inc" CONTENT "${_hex}\n" @ONLY)
# ... and its byte-level (MLTK) tokenizer.
set(_tok_mltk "${PROJECT_SOURCE_DIR}/fuzz/data/encode_tokenizer.mltk")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_tok_mltk}")
file(READ "${_tok_mltk}" _hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _hex "${_hex}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n" _hex "${_hex}")
file(CONFIGURE OUTPUT "${_gen_dir}/fuzz_encode_tokenizer_mltk.inc" CONTENT "${_hex}\n" @ONLY)

foreach(_t IN LISTS ML_FUZZ_TARGETS)
  add_library(ml_fuzz_${_t} OBJECT fuzz/fuzz_${_t}.cc)
  target_include_directories(ml_fuzz_${_t} PRIVATE "${_gen_dir}")
  set(_libs ml_runtime)
  if(_t STREQUAL "request")  # ml_server's request layer: its parsing and policy sources, no cpp-httplib
    set(_libs ml_structured ml_runtime)  # request.cc reads tools with structured/tools.h
    ml_layer_root(server _server_root)
    target_sources(ml_fuzz_request PRIVATE server/request.cc server/http_policy.cc)
    target_include_directories(ml_fuzz_request PRIVATE "${_server_root}")
  endif()
  target_link_libraries(ml_fuzz_${_t} PUBLIC ${_libs})

  # Replay: the guarded main (CPU check first), then ml_main of fuzz/replay_main.cc.
  add_executable(fuzz_${_t}_replay fuzz/replay_main.cc $<TARGET_OBJECTS:ml_fuzz_${_t}>
                 $<TARGET_OBJECTS:ml_guarded_main>)
  target_link_libraries(fuzz_${_t}_replay PRIVATE ml_guard ${_libs})
  set(_dirs "${PROJECT_SOURCE_DIR}/fuzz/corpus/${_ml_fuzz_corpus_${_t}}")
  if(EXISTS "${PROJECT_SOURCE_DIR}/fuzz/regressions/${_t}")
    list(APPEND _dirs "${PROJECT_SOURCE_DIR}/fuzz/regressions/${_t}")
  endif()
  add_test(NAME fuzz.replay.${_t} COMMAND fuzz_${_t}_replay ${_dirs})
  # Seconds, not minutes: a regression to a quadratic encoder (120 KB prompt) must fail here.
  set_tests_properties(fuzz.replay.${_t} PROPERTIES TIMEOUT 300)

  if(ML_FUZZ)
    add_executable(fuzz_${_t} $<TARGET_OBJECTS:ml_fuzz_${_t}>)
    target_link_libraries(fuzz_${_t} PRIVATE ${_libs})
    target_link_options(fuzz_${_t} PRIVATE -fsanitize=fuzzer)
    add_test(NAME fuzz.run.${_t}
             COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/fuzz/run_fuzz.py $<TARGET_FILE:fuzz_${_t}>
                     --name ${_t} --seconds ${ML_FUZZ_SECONDS} --max-len ${_ml_fuzz_maxlen_${_t}}
                     --seeds ${_dirs} --work ${CMAKE_BINARY_DIR}/fuzz_work/${_t})
    set_tests_properties(fuzz.run.${_t} PROPERTIES ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
  endif()
endforeach()

add_test(NAME fuzz.corpus COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/fuzz/gen_corpus.py --check)

# ASan (and TSan) programs cannot run under qemu-user (they reserve terabytes of shadow address
# space at start, which qemu-x86_64 tracks page by page: ml_run --version did not start in 120 s).
# The CPU guard tests of cmake/tests/<family>.cmake run ml_run under qemu CPU models, so such a
# build lists them as Disabled (allowed in verify/allowed_skips.txt); the plain presets of the
# same ISA run them.
if(ML_SANITIZE MATCHES "address|thread")
  get_property(_ml_all_tests DIRECTORY PROPERTY TESTS)
  foreach(_test IN LISTS _ml_all_tests)
    if(_test MATCHES "^guard\\.")
      set_tests_properties(${_test} PROPERTIES DISABLED TRUE)
      list(APPEND _ml_disabled ${_test})
    endif()
  endforeach()
  if(_ml_disabled)
    message(STATUS "legacy-ml: ${ML_SANITIZE} build: disabled the qemu CPU-guard tests (${_ml_disabled})")
  endif()
endif()
