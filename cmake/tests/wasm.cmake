# Tests of the WebAssembly builds (wasm-scalar, wasm-simd128), included by cmake/Tests.cmake.
# Everything in cmake/Tests.cmake already runs under node (the toolchain's
# CMAKE_CROSSCOMPILING_EMULATOR; ml_tests.js and ml_run.js are NODERAWFS builds, cmake/wasm.cmake):
# every kernel variant against scalar, quantization, the forward pass against the scalar forward
# on stories260K and random models (F32, Q8_0, Q4_0), the tokenizer, malformed files, and ml_run's
# command line with llama2.c's golden text.
#
# wasm.browser: the pages in real headless Chromium (wasm/browser_test.sh → wasm/browser_test.js):
# verify.html passes every check with the module the browser picks and fails with a wrong
# tolerance; demo.html's text equals the native scalar ml_run's for the same prompt and seed, also
# with a byte-level BPE tokenizer (MLTK) and a multi-byte prompt (ML_PYTHON writes its model); the
# scalar module (the wasm-scalar build's, which the simd128 build's www/ serves) is also forced —
# verify.html passes every check on it — and auto-selected for a browser without SIMD, whose demo text
# equals ml_run's. Then the same folder from wasm/serve.mjs (COOP/COEP; the wasm-simd128-threads build's
# module, which this build's www/ also serves): verify.html picks the threaded build there and passes
# every check as above, plus logits at 2..4 threads bit-identical to 1 thread's on models that wake the
# pool, also for a browser reporting 32 cores (16 threads); ?module=simd128_threads on the plain
# server is refused in one line; demo.html's chat shows `threads: N` (N >= 2) and its greedy replies
# are byte for byte the single-thread page's (Q8_0 and F32). Here rather than in wasm.threads: one
# www/ holds the three modules, so the single-thread page's replies come from the same run to compare
# with, and Chromium, the servers and the models are already there (it adds 19-25 s on 2 busy
# cores: 30 s → 58 s for the whole test at load average 5). Registered in wasm-simd128 only:
# a run in wasm-scalar would load the same scalar module into the same pages again (and took 229 s of
# Chromium under the matrix's load). Screenshots: build/<preset>/screenshot_*.png.
if(ML_THREADS)
  # The pthreads build (preset wasm-simd128-threads): its module and the model loader in Chromium
  # (wasm/threads_test.sh → wasm/threads_test.js): bit-identical logits at 1-4 threads, streamed
  # loading with progress, the Cache API (requests counted by wasm/serve.mjs), GGUF from a URL, a
  # 5 GiB file refused from its headers, one copy of the weights, the single-thread choice on a
  # page without COOP/COEP. The pages with this module (verify.html, the demo's chat on a
  # cross-origin-isolated page) are tested by wasm-simd128's wasm.browser, whose www/ also serves it
  # (ML_WASM_THREADS_DIR).
  set(_gguf "${ML_SHARED_DIR}/models/stories260K/stories260K.gguf")
  add_test(NAME wasm.threads COMMAND sh ${PROJECT_SOURCE_DIR}/wasm/threads_test.sh ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR} ${_gguf})
  set_tests_properties(wasm.threads PROPERTIES TIMEOUT 600)
  if(NOT EXISTS "${_gguf}")
    set_tests_properties(wasm.threads PROPERTIES DISABLED TRUE)  # as wasm.browser: CI has ../shared
  endif()
  return()
endif()
if(ML_ISA STREQUAL "wasm_simd128")
  add_test(NAME wasm.browser
           COMMAND sh ${PROJECT_SOURCE_DIR}/wasm/browser_test.sh ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR} simd128
                   ${ML_NATIVE_SCALAR_DIR} "${ML_WASM_SCALAR_DIR}" "${ML_WASM_THREADS_DIR}")
  # (RESOURCE_LOCK: wasm.browser and wasm.npm install playwright-core into the same build/<preset>/npm.)
  set_tests_properties(wasm.browser PROPERTIES TIMEOUT 1800 RESOURCE_LOCK ml_wasm_npm_dir
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;ML_PYTHON=${ML_PYTHON}")
  if(NOT EXISTS "${ML_SHARED_DIR}/models/stories260K/stories260K.bin")
    # No served model: the pages cannot be tested. Disabled, which fails CI (tools/test_matrix.sh with
    # CI=true: verify/allowed_skips.txt does not allow it); CI has ../shared and runs it.
    set_tests_properties(wasm.browser PROPERTIES DISABLED TRUE)
  endif()
endif()

# wasm.api: the browser module's generation API under node (wasm/api_test.mjs → wasm/ml.js
# Model.configure → wasm/web_api.cc mlw_config_*): top_k 1 = greedy, the chain at neutral stages =
# the plain sampler, logit_bias bans and forces, logprobs <= 0 with the chosen token the top entry at
# temperature 0, JSON-schema outputs that JSON.parse and validate (ajv from tools/npm when installed,
# by hand always), json_object, and the runtime's one-line errors (a schema's "pattern", bad chain
# values). Runs the module the pages load, on stories260K.gguf with its own tokenizer. Then issue 35's
# memory bound on the npm engine's loading path (wasm/loader.js): wasm memory <= file + KV cache +
# 64 MiB for a random model with a 14 MB file and a 512 MiB cache (fixture.wasm_memory: 16 layers,
# 32768 positions), and a second load after ml_close and freeModel grows nothing; the same model as a
# GGUF converted as it streams in: the tokens of load_gguf's conversion, memory growth <= converted
# weights + KV cache + 4 MiB (the file held whole first would add its 13 MiB).
set(_gguf "${ML_SHARED_DIR}/models/stories260K/stories260K.gguf")
if(ML_NODE_EXE)
  set(_memory_model "${CMAKE_BINARY_DIR}/random_longctx_q8_0.mlb")
  # (and the same model as a GGUF with tok512 in its metadata: the streamed conversion's memory)
  add_test(NAME fixture.wasm_memory
           COMMAND sh -c "\"$0\" \"$1/tools/gen_random.py\" \"$2\" --layers 16 --seq 32768 --wtype q8_0 -q && \"$0\" \"$1/tools/export.py\" \"$2\" \"$3\" --format gguf --dtype q8_0 --tokenizer \"$4\""
                   ${ML_PYTHON} ${PROJECT_SOURCE_DIR} ${_memory_model} ${CMAKE_BINARY_DIR}/random_longctx_q8_0.gguf
                   ${ML_SHARED_DIR}/models/stories260K/tok512.bin)
  set_tests_properties(fixture.wasm_memory PROPERTIES FIXTURES_SETUP wasm_memory ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
  add_test(NAME wasm.api
           COMMAND ${ML_NODE_EXE} --no-warnings ${PROJECT_SOURCE_DIR}/wasm/api_test.mjs $<TARGET_FILE:ml_web> ${_gguf}
                   ${_memory_model} ${ML_SHARED_DIR}/models/stories260K/tok512.bin ${PROJECT_SOURCE_DIR}/tools/npm/node_modules)
  set_tests_properties(wasm.api PROPERTIES TIMEOUT 600 FIXTURES_REQUIRED wasm_memory)
  if(NOT EXISTS "${_gguf}")
    set_tests_properties(wasm.api PROPERTIES DISABLED TRUE)  # as wasm.browser: CI has ../shared
  endif()
endif()

# wasm.npm (wasm-simd128 only: the package holds its module, the wasm-scalar one and the
# wasm-simd128-threads one, so those presets are built first): the npm package as a user gets it
# (wasm/package/test/npm_test.sh): `npm pack` (target npm_package), `npm install --offline` of the
# tarball into an empty folder, tsc --strict --noEmit of a consumer against its declarations (and a
# wrong consumer rejected), then the package from node (node_test.mjs: golden and native ml_run
# texts, streaming, stop, abort, chat prefix reuse, unload measured) and from a page in Chromium
# (browser_test.mjs: the engine in a Worker, no main-thread long task, the animation running; on a
# cross-origin-isolated page the threaded build, its text = ml_run's, the Cache API on a reload).
if(ML_ISA STREQUAL "wasm_simd128" AND ML_NODE_EXE)
  add_test(NAME wasm.npm
           COMMAND sh ${PROJECT_SOURCE_DIR}/wasm/package/test/npm_test.sh ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR}
                   ${ML_SHARED_DIR} ${ML_NATIVE_SCALAR_DIR})
  set_tests_properties(wasm.npm PROPERTIES TIMEOUT 900 RESOURCE_LOCK ml_wasm_npm_dir
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;ML_PYTHON=${ML_PYTHON}")
  if(NOT EXISTS "${ML_SHARED_DIR}/models/stories260K/stories260K.gguf")
    set_tests_properties(wasm.npm PROPERTIES DISABLED TRUE)  # as wasm.browser: CI has ../shared
  endif()
endif()
