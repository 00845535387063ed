# The Windows x64 suite (win-* presets: mingw-w64 cross build, every .exe run under Wine, which is
# CMAKE_CROSSCOMPILING_EMULATOR; docs/windows.md). Included by cmake/Tests.cmake instead of the rest
# of the Linux suite: Wine starts a process in ~0.1-0.3 s, so the tests that spawn hundreds of
# processes (cli, tokenizer.oracle), need Python or qemu inside (reference.*, guard.*) or only
# repeat what the Linux presets already prove about the same source stay on Linux; ml_tests.exe
# is compiled from the test files of these groups only (cmake/Tests.cmake). The Python
# drivers below run on Linux and launch the .exe through Wine.
# What runs here, each under Wine:
#   kernels, quant           every kernel against the scalar reference (verify/kernel_checks.cc ...)
#   e2e.*                    the build's forward bit-identical to the scalar forward (random models,
#                            threads, batched prefill, panels, stories260K)
#   portability              the guard refusing injected CPUID words; a non-ASCII model path
#   threads.pool (win-sse2)  the thread pool's end-of-job handshake and its solo policy
#   model.malformed          the loader's refusals (missing file, directory, empty, bad fields)
#   golden.stories260K       llama2.c's stories260K text, byte for byte (stdout in binary mode)
#   logits.identical         quantized --logits files equal to the --reference run's
#   logits.checksum          ... and to the Linux builds' bytes (committed SHA-256; non-ASCII paths,
#                            the --logits rename replacing an existing file)
#   server.wine, server.openai (win-sse2 only) ml_server.exe over loopback: test_server.py's classes
#                            that touch the Windows code (sockets, Ctrl-C stop, taken port, disconnects),
#                            and the openai npm client on Linux
set(_ml_wine ${CMAKE_CROSSCOMPILING_EMULATOR})
# The Wine prefix (WINEPREFIX, set by the test preset) is created by the first process that starts;
# one test does that before the others start in parallel.
add_test(NAME wine.prefix COMMAND ml_run --version)
set_tests_properties(wine.prefix PROPERTIES FIXTURES_SETUP wine TIMEOUT 300)

ml_test_group(kernels "[kernels]" FIXTURES wine)
ml_test_group(quant "[quant]" FIXTURES wine)
ml_test_group(portability "[portability]" FIXTURES wine random)
ml_test_group(model.malformed "[model]" FIXTURES wine random)  # the loader's errors through CreateFileW
ml_test_group(e2e.random "ISA forward vs scalar forward: random*" FIXTURES wine random)
ml_test_group(e2e.threads "logits are bit-identical for*" FIXTURES wine random)
ml_test_group(e2e.batch "batched prefill*" FIXTURES wine random)
ml_test_group(e2e.panels "16-row panels*" FIXTURES wine random)
ml_test_group(e2e.stories260K "ISA forward vs scalar forward: stories260K" SHARED FIXTURES wine stories260K)
if(ML_ISA STREQUAL "sse2")  # the pool's handshake and solo policy on Windows threads, once
  ml_test_group(threads.pool "[threads]" FIXTURES wine)
endif()

# llama2.c's text (verify/guard_test.py's golden mode, as the Linux guard.golden_on_* tests).
add_test(NAME golden.stories260K COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/verify/guard_test.py golden
         --model ${ML_MODELS_DIR}/stories260K_f32.mlb --tokenizer ${ML_SHARED_DIR}/models/stories260K/tok512.bin
         --golden ${ML_SHARED_DIR}/golden/once_upon_a_time.txt -- ${_ml_wine} $<TARGET_FILE:ml_run>)
add_test(NAME logits.identical COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/verify/logits_compare.py
         --models ${ML_MODELS_DIR} --shared ${ML_SHARED_DIR} -- ${_ml_wine} $<TARGET_FILE:ml_run>)
ml_logits_checksum_test(logits.checksum)
set_tests_properties(golden.stories260K logits.identical logits.checksum PROPERTIES SKIP_RETURN_CODE 77
  FIXTURES_REQUIRED "wine;stories260K;random" ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;LC_ALL=C.UTF-8")

# --hf (hub/hub.h) through WinHTTP: ml_run.exe against verify/hub_stub.py over plain HTTP on loopback
# (verify/tests/test_hub.py, the same cases as on Linux, ml_bench.exe's and ml_server.exe's --hf too).
ml_hub_tests()

# ml_server.exe (server/; docs/windows.md): the server's code is the same in every Windows build and
# each Wine start costs, so win-sse2 alone runs it. server.wine: verify/tests/test_server.py's
# ML_SERVER_TESTS=wine classes (Completions, BadInput, ApiKey, Startup, Slots: greedy text = ml_run.exe's,
# streaming, 413 bodies, the key, a taken port refused (SO_EXCLUSIVEADDRUSE), disconnects freeing a
# slot, the queue's 503, and every stop a clean Ctrl-C: wine_run.sh passes SIGTERM on as SIGINT, which
# Wine delivers as CTRL_C_EVENT). server.openai: the openai npm client on Linux (tools/npm; 77 when
# tools/setup.sh did not install it) against ml_server.exe on loopback.
if(ML_HAVE_SERVER AND ML_ISA STREQUAL "sse2")
  set(_ml_server_env "${ML_TEST_ENV};ML_SERVER=$<TARGET_FILE:ml_server>;ML_RUN=$<TARGET_FILE:ml_run>;ML_TOKENIZE=$<TARGET_FILE:ml_tokenize>;ML_PYTHON=${ML_PYTHON};ML_EMULATOR=${ML_EMULATOR_STR}")
  add_test(NAME server.wine COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/verify/run_unittest.py
           ${PROJECT_SOURCE_DIR}/verify/tests/test_server.py)
  set_tests_properties(server.wine PROPERTIES ENVIRONMENT "${_ml_server_env};ML_SERVER_TESTS=wine"
                       FIXTURES_REQUIRED "wine;stories260K" SKIP_RETURN_CODE 77 TIMEOUT 300)
  find_program(ML_NODE_EXE node)
  if(ML_NODE_EXE)
    add_test(NAME server.openai COMMAND ${ML_NODE_EXE} ${PROJECT_SOURCE_DIR}/verify/server_openai.js)
    set_tests_properties(server.openai PROPERTIES ENVIRONMENT "${_ml_server_env}" FIXTURES_REQUIRED "wine;stories260K"
                         SKIP_RETURN_CODE 77 TIMEOUT 300)
  endif()
endif()

# python.dll: the Python wheel's Windows half (cmake/Python.cmake: ml_<isa>.dll, ml_probe.dll). No
# Windows Python here, so verify/dll_smoke.c does under Wine what python/legacy_ml/_native.py and
# Llama do: the probe's choice over this build's DLL, LoadLibrary, the session API, llama2.c's
# stories260K text byte for byte. Every win-* preset: each proves its own ISA's DLL (~2 s).
if(TARGET ml_python_isa)
  add_executable(ml_dll_smoke verify/dll_smoke.c)
  target_include_directories(ml_dll_smoke PRIVATE "${ML_ROOT_runtime}")
  add_dependencies(ml_dll_smoke ml_python)
  add_test(NAME python.dll COMMAND ml_dll_smoke ${CMAKE_BINARY_DIR} ${ML_SHARED_DIR}/models/stories260K/stories260K.gguf
           ${ML_SHARED_DIR}/golden/once_upon_a_time.txt)
  set_tests_properties(python.dll PROPERTIES FIXTURES_REQUIRED wine SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()
