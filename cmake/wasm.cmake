# WebAssembly builds (Emscripten; presets wasm-scalar and wasm-simd128, cmake/presets/wasm.json).
# Included from CMakeLists.txt right after the options when the toolchain is Emscripten's
# (cmake/toolchains/emscripten.cmake). What it adds:
#   - read-not-mapped builds (ML_MMAP=OFF), single-threaded (ML_THREADS=OFF: presets wasm-scalar,
#     wasm-simd128) or pthreads (ML_THREADS=ON: preset wasm-simd128-threads; every object compiled
#     with -pthread, shared wasm memory, the pool's threads are Web Workers / node worker_threads
#     started with the module (PTHREAD_POOL_SIZE), so a pool starts without yielding to the event
#     loop; its module is ml_web_simd128_threads, for cross-origin-isolated pages only);
#   - node builds of every program (ml_run.js, ml_bench.js, ml_tests.js, ...): CommonJS,
#     NODERAWFS (host files as native programs see them), process.env passed to getenv
#     (wasm/node_pre.js), exit status from main; ctest runs them with node (the toolchain's
#     CMAKE_CROSSCOMPILING_EMULATOR). ml_tests gets -fexceptions (Catch2).
#   - the browser module ml_web_<variant>.mjs/.wasm (variant simd128 or scalar): an ES6 module
#     factory createMlModule() exporting the public C API, the verify/ harness and the generation
#     configuration (sampler chain, logprobs, JSON constraint) (wasm/web_api.cc);
#   - the npm package legacy-ml (wasm-simd128 only: target npm_package, cmake/npm.cmake);
#   - the served folder build/<preset>/www (target `www`, wasm/assemble_www.cmake): the pages and
#     glue from wasm/, this build's module, the wasm-scalar build's module when this is the
#     simd128 build (ML_WASM_SCALAR_DIR), modules.json naming what is there, and stories260K
#     converted to .mlb (F32, Q8_0, Q4_0) with its tokenizer under www/models/ (and, but in
#     wasm-scalar, random_threads_{q8_0,q4_0}.mlb for verify.html's thread check).
# Tests: cmake/tests/wasm.cmake.
set(ML_WASM_THREADS_DIR "" CACHE PATH
    "wasm-simd128 only: the wasm-simd128-threads build folder whose ml_web_simd128_threads module www/ also serves")
if(ML_THREADS)
  if(NOT ML_ISA STREQUAL "wasm_simd128")
    message(FATAL_ERROR "the WebAssembly pthreads build is ML_ISA=wasm_simd128 (preset wasm-simd128-threads), not ${ML_ISA}")
  endif()
  add_compile_options(-pthread)
  # Workers made when the module starts: the pool's n-1 threads must exist before ml_open's
  # ThreadPool::start joins them in a barrier (a thread made later starts only when the main
  # browser thread returns to its event loop: fine for a module in a Worker, a hang for one on the
  # page's main thread). A browser gets one per core (at least 4, at most 16), node 8.
  add_link_options(-pthread)
endif()
if(ML_MMAP)
  message(STATUS "legacy-ml: WebAssembly build: ML_MMAP forced OFF (model files are read into memory)")
  set(ML_MMAP OFF CACHE BOOL "map model files (OFF: read them into one aligned buffer)" FORCE)
endif()
set(ML_WASM_SCALAR_DIR "" CACHE PATH
    "wasm-simd128 only: the wasm-scalar build folder whose ml_web_scalar module www/ also serves")
set(ML_NATIVE_SCALAR_DIR "${PROJECT_SOURCE_DIR}/build/scalar" CACHE PATH
    "the native scalar build whose ml_run the browser test compares the demo's text with")

# Link options of the browser module: the public C API plus the harness entry points.
set(ML_WEB_EXPORTS
    _malloc _free
    _ml_options_init _ml_open _ml_close _ml_last_error _ml_status_name
    _ml_encode _ml_decode _ml_eval _ml_sampler_set _ml_sample _ml_text_stream_feed
    _ml_session_new _ml_session_free _ml_session_set_options _ml_session_set_prompt _ml_session_prefill
    _ml_session_next _ml_session_echo _ml_session_n_past _ml_session_n_generated _ml_session_tokens
    _ml_encode_bound _ml_chat_detect _ml_chat_parse_name _ml_chat_format_name _ml_chat_render _ml_chat_encode
    _ml_chat_stop_ids
    _ml_build_isa _ml_kernel_count _ml_kernel_name _ml_kernel_impl _ml_hwy_target
    _mlw_verify_kernels _mlw_verify_quant _mlw_verify_selftest _mlw_verify_e2e _mlw_verify_threads
    _mlw_build_json _mlw_info_json _mlw_sizeof_options _mlw_sizeof_text_stream _mlw_session_options
    _mlw_config_new _mlw_config_free _mlw_config_sampling _mlw_config_logprobs _mlw_config_json
    _mlw_config_options _mlw_config_stops _mlw_logprobs_json)
# The model loader's (wasm/loader_api.cc, wasm/loader.js).
list(APPEND ML_WEB_EXPORTS _ml_open_memory _mlw_model_alloc _mlw_model_free _mlw_open_memory _mlw_plan_mlb _mlw_threads _mlw_max_threads
     _mlw_gguf_begin _mlw_gguf_weight_bytes _mlw_gguf_kv_bytes _mlw_gguf_feed _mlw_gguf_open _mlw_gguf_free)
string(REPLACE ";" "," ML_WEB_EXPORTS "${ML_WEB_EXPORTS}")

# Node programs link at -O1: their code is compiled at -O3 already, and binaryen's -O3 pass over
# the linked module costs 3x the link time for no measurable speed (ml_run: 16 s vs 6 s per link).
function(ml_wasm_node_program target)
  if(ML_THREADS)
    target_link_options(${target} PRIVATE -sPTHREAD_POOL_SIZE=8)
  endif()
  target_link_options(${target} PRIVATE -O1
    -sENVIRONMENT=node -sNODERAWFS=1 -sEXIT_RUNTIME=1 -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=4GB
    "SHELL:--pre-js ${PROJECT_SOURCE_DIR}/wasm/node_pre.js")
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS "${PROJECT_SOURCE_DIR}/wasm/node_pre.js")
endfunction()

# Runs at the end of the top-level CMakeLists.txt, when every target exists.
function(ml_wasm_targets)
  # Every program of the build (ml_run, ml_bench, ml_tests, ...) is a node program.
  get_property(_targets DIRECTORY "${PROJECT_SOURCE_DIR}" PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t IN LISTS _targets)
    get_target_property(_type ${t} TYPE)
    if(_type STREQUAL "EXECUTABLE")
      ml_wasm_node_program(${t})
    endif()
  endforeach()
  set_target_properties(ml_isa_probe PROPERTIES EXCLUDE_FROM_ALL TRUE)  # a host-CPU tool; nothing to probe in wasm
  if(TARGET ml_tests)
    target_compile_options(ml_tests PRIVATE -fexceptions)
    target_link_options(ml_tests PRIVATE -fexceptions)
    # (The Catch2 runner is compiled at -O0 on every build: cmake/Tests.cmake.)
  endif()

  # The browser module.
  if(ML_ISA STREQUAL "wasm_simd128")
    set(_variant simd128)
  elseif(ML_ISA STREQUAL "scalar")
    set(_variant scalar)
  else()
    message(FATAL_ERROR "WebAssembly builds are ML_ISA=wasm_simd128 or scalar, not ${ML_ISA}")
  endif()
  set(_env web)
  if(ML_THREADS)
    set(_variant simd128_threads)
    set(_env web,worker)  # the pool's threads run the module in Workers
  endif()
  add_executable(ml_web wasm/web_api.cc wasm/loader_api.cc)
  ml_isa_flags(ml_web)
  target_link_libraries(ml_web PRIVATE ml_verify ml_structured)
  if(ML_THREADS)
    target_link_options(ml_web PRIVATE "-sPTHREAD_POOL_SIZE=Math.max(4,Math.min(self.navigator.hardwareConcurrency||1,16))")
  endif()
  set_target_properties(ml_web PROPERTIES OUTPUT_NAME ml_web_${_variant} SUFFIX ".mjs")
  # Memory grows to what malloc asks for plus 20 % of the memory (Emscripten's geometric step), at
  # most 2 MiB past the request. Wasm memory never shrinks, and the default cap (96 MiB past each
  # request) put a TinyLlama-shape page 96 MiB over issue 35's bound (file + KV cache + 64 MiB): the
  # tokenizer's small buffer after the 656 MiB model buffer, then the context's arena, each grew it
  # 96 MiB past the need (docs/bench.md). Loading grows memory three or four times whatever the cap
  # (the model buffer, the tokenizer, the arena: one allocation each), so the small cap costs no time.
  target_link_options(ml_web PRIVATE
    -O2 --no-entry -sMODULARIZE=1 -sEXPORT_ES6=1 -sENVIRONMENT=${_env} -sEXPORT_NAME=createMlModule
    -sALLOW_MEMORY_GROWTH=1 -sMEMORY_GROWTH_GEOMETRIC_CAP=2MB -sMAXIMUM_MEMORY=4GB -sFILESYSTEM=1
    "-sEXPORTED_FUNCTIONS=${ML_WEB_EXPORTS}"
    "-sEXPORTED_RUNTIME_METHODS=FS,UTF8ToString,stringToUTF8,lengthBytesUTF8")

  # The served folder.
  set(_www "${CMAKE_BINARY_DIR}/www")
  set(_src "${ML_SHARED_DIR}/models/stories260K")
  set(_models "")
  if(EXISTS "${_src}/stories260K.bin" AND EXISTS "${_src}/tok512.bin")
    set(_models "${_www}/models/stories260K_f32.mlb" "${_www}/models/stories260K_q8_0.mlb"
                "${_www}/models/stories260K_q4_0.mlb" "${_www}/models/tok512.bin")
    add_custom_command(OUTPUT ${_models}
      COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/verify/make_fixtures.py stories260K ${_www}/models ${ML_SHARED_DIR}
      COMMAND ${CMAKE_COMMAND} -E copy_if_different ${_src}/tok512.bin ${_www}/models/tok512.bin
      DEPENDS ${_src}/stories260K.bin ${_src}/tok512.bin ${PROJECT_SOURCE_DIR}/tools/convert.py
              ${PROJECT_SOURCE_DIR}/tools/mlb.py
      COMMENT "Converting stories260K for the pages (www/models)" VERBATIM)
  else()
    message(WARNING "${_src} has no stories260K.bin/tok512.bin: the pages will have no served model")
  endif()
  # verify.html's thread check (the threaded module, which the simd128 and threads folders serve):
  # random models whose every matrix product reads more than the 64 KiB of weights the forward pass
  # needs before it wakes the pool (stories260K's quantized ones stay on the calling thread), Q8_0
  # and Q4_0 (no tokenizer: the check feeds ids).
  set(_threads_shape --dim 384 --hidden 1024 --layers 2 --heads 6 --kv-heads 2 --vocab 512 --seq 64 --seed 35 -q)
  set(_threads_models q8_0 q4_0)
  if(_variant STREQUAL "scalar")
    set(_threads_models "")
  endif()
  foreach(w IN LISTS _threads_models)
    set(_m "${_www}/models/random_threads_${w}.mlb")
    add_custom_command(OUTPUT ${_m}
      COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/tools/gen_random.py ${_m} ${_threads_shape} --wtype ${w}
      DEPENDS ${PROJECT_SOURCE_DIR}/tools/gen_random.py ${PROJECT_SOURCE_DIR}/tools/mlb.py
              ${PROJECT_SOURCE_DIR}/tools/convert.py
      COMMENT "Writing www/models/random_threads_${w}.mlb (verify.html's thread check)" VERBATIM)
    list(APPEND _models ${_m})
  endforeach()
  add_custom_target(www ALL
    COMMAND ${CMAKE_COMMAND} -DSRC=${PROJECT_SOURCE_DIR}/wasm -DWWW=${_www} -DMODULE=$<TARGET_FILE:ml_web>
            -DVARIANT=${_variant} -DSCALAR_DIR=${ML_WASM_SCALAR_DIR} -DTHREADS_DIR=${ML_WASM_THREADS_DIR} -P ${PROJECT_SOURCE_DIR}/wasm/assemble_www.cmake
    DEPENDS ml_web ${_models}
    COMMENT "Assembling the served folder ${_www}" VERBATIM)

  if(_variant STREQUAL "simd128")
    include(${PROJECT_SOURCE_DIR}/cmake/npm.cmake)  # the npm package (both modules)
  endif()
endfunction()
cmake_language(DEFER CALL ml_wasm_targets)
