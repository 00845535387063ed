# The CTest suite of one preset. Few binaries: ml_tests (Catch2, run by tag group), ml_run (CLI
# tests in Python), the converter's Python tests, and the fixtures that write the test models.
set(ML_MODELS_DIR "${CMAKE_BINARY_DIR}/models")
if(NOT EXISTS "${ML_SHARED_DIR}/models/stories260K/stories260K.bin")
  message(WARNING "\n*** ${ML_SHARED_DIR} has no models/stories260K: the tests on the real model and the golden "
                  "text will be SKIPPED. Set -DML_SHARED_DIR=... to the shared data folder.\n")
endif()
set(ML_EMULATOR_STR "${CMAKE_CROSSCOMPILING_EMULATOR}")  # a ;-list, passed through the environment
string(REPLACE ";" "|" ML_EMULATOR_STR "${ML_EMULATOR_STR}")
set(ML_TEST_ENV "ML_SHARED=${ML_SHARED_DIR}" "ML_MODELS=${ML_MODELS_DIR}" "ML_SOURCE=${PROJECT_SOURCE_DIR}"
    "PYTHONDONTWRITEBYTECODE=1")

# Fixtures: test models.
add_test(NAME fixture.stories260K COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/verify/make_fixtures.py stories260K
         ${ML_MODELS_DIR} ${ML_SHARED_DIR})
set_tests_properties(fixture.stories260K PROPERTIES FIXTURES_SETUP stories260K SKIP_RETURN_CODE 77)
add_test(NAME fixture.random COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/verify/make_fixtures.py random ${ML_MODELS_DIR})
set_tests_properties(fixture.random PROPERTIES FIXTURES_SETUP random)

# ml_tests: Catch2 cases compiled without ISA flags; the checks live in the verify library.
file(GLOB ML_TEST_SOURCES CONFIGURE_DEPENDS verify/tests/*.cc)
if(WIN32)  # the Windows suite runs these groups only (cmake/tests/windows.cmake): a quarter less to compile
  list(FILTER ML_TEST_SOURCES INCLUDE REGEX "/(main|test_kernels|test_quant|test_e2e|test_model|test_portability|test_threads)\\.cc$")
endif()
add_executable(ml_tests ${ML_TEST_SOURCES} $<TARGET_OBJECTS:ml_guarded_main>)
# The build's ISA only where a case asks for it (CMakeLists.txt: ML_ISA_DEFINE); the Catch2 runner at
# -O0 (Catch's whole implementation, none of our checks): its speed does not matter, and -O3 made it
# the slowest file to compile (em++: 9 s of CPU at -O0 against 27 s).
set_property(SOURCE verify/tests/test_kernels.cc verify/tests/test_portability.cc verify/tests/test_pinned.cc
             verify/tests/test_gguf_types.cc
             APPEND PROPERTY COMPILE_DEFINITIONS ${ML_ISA_DEFINE})
if(NOT MSVC)
  set_property(SOURCE verify/tests/main.cc APPEND PROPERTY COMPILE_OPTIONS -O0)
endif()
target_link_libraries(ml_tests PRIVATE ml_guard ml_verify ml_structured ml_hub)  # ml_hub: hub/sha256.cc for [sha256]

# ml_test_group(<name> <catch tags or test spec> [SHARED] [FIXTURES ...] [EMULATOR cmd...]): one
# ctest entry running the matching ml_tests cases; -w NoTests fails it when nothing matches.
# EMULATOR replaces the preset's CMAKE_CROSSCOMPILING_EMULATOR (e.g. qemu with another -cpu).
function(ml_test_group name tags)
  cmake_parse_arguments(G "SHARED" "" "FIXTURES;EMULATOR" ${ARGN})
  if(G_EMULATOR)
    add_test(NAME ${name} COMMAND ${G_EMULATOR} $<TARGET_FILE:ml_tests> "${tags}" -w NoTests --use-colour no)
  else()
    add_test(NAME ${name} COMMAND ml_tests "${tags}" -w NoTests --use-colour no)
  endif()
  set(_env ${ML_TEST_ENV})
  if(G_SHARED)
    list(APPEND _env "ML_NEEDS_SHARED=1")
  endif()
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${_env}" SKIP_RETURN_CODE 77)
  if(G_FIXTURES)
    set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED "${G_FIXTURES}")
  endif()
endfunction()

# logits.checksum (verify/logits_checksum.py): stories260K's quantized --logits files and text
# against the SHA-256 sums committed in verify/data/, the same bytes on Linux and Windows.
function(ml_logits_checksum_test name)
  add_test(NAME ${name} COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/verify/logits_checksum.py --models ${ML_MODELS_DIR}
           --shared ${ML_SHARED_DIR} -- ${CMAKE_CROSSCOMPILING_EMULATOR} $<TARGET_FILE:ml_run>)
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 FIXTURES_REQUIRED stories260K
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;LC_ALL=C.UTF-8")
endfunction()
# Checks whose outcome does not depend on the build (Python or node over committed files): once per
# matrix, in the plain scalar preset — not again under wasm, the sanitizers or the fuzz build.
set(ML_ONCE OFF)
if(ML_ISA STREQUAL "scalar" AND NOT EMSCRIPTEN AND NOT ML_SANITIZE AND NOT ML_FUZZ)
  set(ML_ONCE ON)
endif()
# sve and rvv run under qemu's slowest emulation (SVE-512: ~5x neon-dotprod's time, the matrix's
# longest preset). They run what depends on their vector code — kernels, the forward against scalar,
# logits and golden text at three vector lengths — and leave what is the same C++ on the whole
# architecture (thread splits, the float64 reference check) to neon-dotprod and rv64, and the
# command-line suites (ML_ABI_SUITES below) to neon.
set(ML_ARCH_GENERIC ON)
if(ML_ISA MATCHES "^(sve|rvv)$")
  set(ML_ARCH_GENERIC OFF)
endif()
# The command-line suites (cli, gguf.cli, chat.cli: Python starting ml_run dozens of times, 1-4
# minutes each under emulation) and the byte-level tokenizer oracle test the same C++ on every build
# of an ABI, so they run in one build of each: every x86-64 preset (native, seconds), neon (LP64,
# unsigned char), neon-v7 (ILP32) and wasm-simd128 (wasm32) — not again in neon-dotprod, sve, rvv,
# rv64 (RISC-V 64 has neon's data model; qemu-riscv64 took 200 s for cli, gguf.cli and
# tokenizer.oracle), wasm-scalar or wasm-simd128-threads, whose own code (kernels, the forward,
# threads) the other tests cover.
set(ML_ABI_SUITES ${ML_ARCH_GENERIC})
if(ML_ISA MATCHES "^(neon_dotprod|rv64)$" OR (EMSCRIPTEN AND (ML_THREADS OR ML_ISA STREQUAL "scalar")))
  set(ML_ABI_SUITES OFF)
endif()
if(WIN32)  # Windows x64 under Wine: a lean suite of its own instead of the rest of this file
  include("${PROJECT_SOURCE_DIR}/cmake/tests/windows.cmake")
  return()
endif()
if(NOT EMSCRIPTEN)  # (node's file system under Emscripten: the non-ASCII path case is not run there)
  ml_test_group(portability "[portability]" FIXTURES random)  # guard on injected CPUID words, non-ASCII paths
endif()
if(ML_ISA STREQUAL "scalar" AND NOT EMSCRIPTEN)
  ml_logits_checksum_test(logits.checksum)  # pins the bytes the Windows presets must reproduce
  add_test(NAME presets.generated COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/tools/gen_presets.py --check)
endif()
if(ML_ONCE)
  # Every #include against the layers' table (runtime -> kernels -> simd; programs on top), and the
  # checker failing on a planted back-edge (tools/check_includes.py).
  add_test(NAME includes.layers COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/tools/check_includes.py --self-test)
  set_tests_properties(includes.layers PROPERTIES ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
endif()
ml_test_group(kernels "[kernels]")
# The "// Defines:" header lines of the compiled kernel sources = the C symbols of libml_kernels
# (cmake/check_kernel_symbols.cmake): what `grep ml_k_<kernel>_<set>` finds is what the build has.
if(NOT MSVC AND CMAKE_NM)  # nm runs here, on the cross builds too (their CMAKE_NM)
  string(REPLACE ";" "|" _ml_kernel_srcs "${ML_KERNEL_SOURCES};${ML_ASM_SOURCES}")
  add_test(NAME kernels.symbols COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM} -DLIB=$<TARGET_FILE:ml_kernels>
           "-DSOURCES=${_ml_kernel_srcs}" -P ${PROJECT_SOURCE_DIR}/cmake/check_kernel_symbols.cmake)
endif()
ml_test_group(quant "[quant]")
# kernels/ggml_blocks.cc (GGUF's block types) = tools/ggml_quants.py bit for bit, every type
ml_test_group(quant.ggml_blocks "[ggml_blocks]" FIXTURES random)
# GGUF's other block types as the runtime holds them = ggml's dequantization, and every build's
# kernels on them = the scalar reference, bit for bit (verify/tests/test_gguf_types.cc)
ml_test_group(gguf.types "[gguf_types]" FIXTURES random)
ml_test_group(quant.converter "[converter]" SHARED FIXTURES stories260K random)
ml_test_group(model.malformed "[model]" FIXTURES random)
ml_test_group(model.memory "[open_memory]" SHARED FIXTURES random)  # ml_open_memory: in place, GGUF, refusals (verify/tests/test_open_memory.cc)
ml_test_group(tokenizer "[tokenizer]" SHARED)
ml_test_group(tokenizer.bpe "[bpe]" FIXTURES random)
# ml_tokenize (native/ml_tokenize.cc) with the byte-level tokenizer of the encode fuzz target
# (fuzz/gen_corpus.py): its ids, --no-special --no-bos, and invalid UTF-8 refused in one line.
set(_ml_mltk ${PROJECT_SOURCE_DIR}/fuzz/data/encode_tokenizer.mltk)
add_test(NAME tokenizer.cli.ids COMMAND ml_tokenize ${_ml_mltk} -i "Once upon a time<|im_end|>")
set_tests_properties(tokenizer.cli.ids PROPERTIES PASS_REGULAR_EXPRESSION "(^|\n)308 276 278 261 264 285 310\n")
add_test(NAME tokenizer.cli.no_special COMMAND ml_tokenize ${_ml_mltk} -i "time<|im_end|>" --no-special --no-bos)
set_tests_properties(tokenizer.cli.no_special PROPERTIES PASS_REGULAR_EXPRESSION "(^|\n)83 281 68 27 91 281 62 270 67 91 29\n")
add_test(NAME tokenizer.cli.bad_utf8 COMMAND ml_tokenize ${_ml_mltk} -f ${PROJECT_SOURCE_DIR}/fuzz/corpus/encode/bad-ff.txt)
set_tests_properties(tokenizer.cli.bad_utf8 PROPERTIES PASS_REGULAR_EXPRESSION "ml_tokenize: text is not valid UTF-8 \\(byte 2\\)\n")
ml_test_group(tokenizer.unicode "[unicode]")  # categories, NFC, pre-tokenizers vs verify/data (test_unicode.cc)
# verify/data/pretokenize_expected.txt is what node's own regex engine gives (verify/pretokenize_oracle.js):
# re-derived live where node is installed (native CI), so the committed file cannot drift.
find_program(ML_NODE_EXE node)
if(ML_NODE_EXE AND ML_ONCE)
  add_test(NAME tokenizer.pretokenize_oracle COMMAND ${ML_NODE_EXE} ${PROJECT_SOURCE_DIR}/verify/pretokenize_oracle.js --check)
  add_test(NAME tokenizer.corpus_current COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/verify/data/gen_tokenizer_corpus.py --check)
  add_test(NAME tokenizer.unicode_tables_current COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/tools/gen_unicode.py --check)
  set_tests_properties(tokenizer.corpus_current tokenizer.unicode_tables_current PROPERTIES SKIP_RETURN_CODE 77)
endif()
ml_test_group(pinned "[pinned]")  # the reference against numbers written in the test (verify/tests/test_pinned.cc)
ml_test_group(sampler "[sampler]")  # top-p's nucleus and proportions, seeds, greedy, the chain against NumPy (verify/tests/test_sampler.cc)
# The chain's expected draws (verify/data/sampler_chain_expected.txt) are what its NumPy statement gives.
add_test(NAME sampler.chain_reference COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/verify/sampler_chain_ref.py --check)
# JSON-schema constrained decoding (structured/json_schema.h, verify/tests/test_json_schema.cc): the compiler's
# errors and the byte matcher; random walks over tok512 and a byte-level vocabulary whose outputs ajv
# validates (verify/json_schema_check.js; skipped, loudly, without node or tools/npm's ajv); mask times.
ml_test_group(json_schema "[json_schema]")
ml_test_group(json_schema.walk "[json_walk]" SHARED)
set_tests_properties(json_schema.walk PROPERTIES FIXTURES_SETUP json_walks)
if(NOT EMSCRIPTEN AND NOT CMAKE_CROSSCOMPILING AND NOT ML_SANITIZE AND NOT ML_FUZZ)
  ml_test_group(json_schema.bench "[json_bench]" SHARED)  # prints times; asserts only that masks agree
endif()
if(NOT EMSCRIPTEN AND NOT CMAKE_CROSSCOMPILING)
  if(ML_NODE_EXE)
    add_test(NAME json_schema.ajv COMMAND ${ML_NODE_EXE} ${PROJECT_SOURCE_DIR}/verify/json_schema_check.js
             ${CMAKE_BINARY_DIR}/json_schema_walks.jsonl 180)
  else()
    add_test(NAME json_schema.ajv COMMAND ${CMAKE_COMMAND} -E echo "*** SKIPPED: node is not installed: the random walks' outputs are not validated with ajv")
    set_tests_properties(json_schema.ajv PROPERTIES SKIP_REGULAR_EXPRESSION "SKIPPED")
  endif()
  set_tests_properties(json_schema.ajv PROPERTIES FIXTURES_REQUIRED json_walks SKIP_RETURN_CODE 77)
endif()
ml_test_group(session "[session]" FIXTURES random)  # ml_session_*: greedy = ml_eval, prefix reuse, finish reasons (verify/tests/test_session.cc)
# Slots decoded together = each alone, bit for bit (verify/tests/test_batch_decode.cc). The batched
# products are the prefill kernels e2e.batch proves in every build; not again under sve/rvv emulation.
if(ML_ARCH_GENERIC)
  ml_test_group(session.batch "[batch_decode]" FIXTURES random)
endif()
# Byte-level BPE token for token against the npm packages of tools/npm (Qwen2.5/3, Llama 3, GPT-2, a trained
# SmolLM2-schema vocabulary), ml_tokenize run under the preset's emulator (verify/tests/test_tokenizers.py).
# Skipped (77, loudly) only without node or tools/npm/node_modules (tools/setup.sh --all installs them).
if(ML_ABI_SUITES)
add_test(NAME tokenizer.oracle COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/verify/run_unittest.py
         ${PROJECT_SOURCE_DIR}/verify/tests/test_tokenizers.py)
# The converted vocabularies and the packages' ids do not depend on the preset: one folder for all
# presets (only ml_tokenize runs again); tools/bpe.py's own encoder is checked on the scalar preset.
set(ML_TOKENIZER_CACHE "${PROJECT_SOURCE_DIR}/build/tokenizer-cache" CACHE PATH
    "vocabularies and outside ids kept between tokenizer.oracle runs of every preset")
set(_ml_tok_python 0)
if(ML_ISA STREQUAL "scalar" AND NOT EMSCRIPTEN AND NOT ML_SANITIZE AND NOT ML_FUZZ)
  set(_ml_tok_python 1)
endif()
set_tests_properties(tokenizer.oracle PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 1800 ENVIRONMENT
  "${ML_TEST_ENV};ML_TOKENIZE=$<TARGET_FILE:ml_tokenize>;ML_EMULATOR=${ML_EMULATOR_STR};ML_NODE=${ML_NODE_EXE};ML_TOKENIZER_WORK=${ML_TOKENIZER_CACHE};ML_TOKENIZER_PYTHON=${_ml_tok_python}")
endif()
# End to end, one CTest test per case so they run in parallel (under qemu each takes minutes).
ml_test_group(e2e.random "ISA forward vs scalar forward: random*" FIXTURES random)
if(ML_THREADS AND ML_ARCH_GENERIC)  # single-threaded builds (WebAssembly) have no thread counts to compare
  ml_test_group(e2e.threads "logits are bit-identical for*" FIXTURES random)
endif()
# The thread pool's end-of-job handshake crossed 12000 times, a watchdog for a lost wake-up, and the
# solo policy (verify/tests/test_threads.cc): once on native x86 (avx2, and its sanitizer builds),
# under each qemu architecture, whose translations of the atomics differ (it hung under
# qemu-aarch64), and in the threaded WebAssembly build (Workers under node); Windows: windows.cmake.
if(ML_THREADS AND ML_ARCH_GENERIC AND (CMAKE_CROSSCOMPILING OR ML_ISA STREQUAL "avx2"))
  ml_test_group(threads.pool "[threads]")
endif()
ml_test_group(e2e.batch "batched prefill*" FIXTURES random)
ml_test_group(e2e.panels "16-row panels*" FIXTURES random)
ml_test_group(e2e.stories260K "ISA forward vs scalar forward: stories260K" SHARED FIXTURES stories260K)
ml_test_group(e2e.teacher_forced "teacher-forced*" SHARED FIXTURES stories260K)
ml_test_group(e2e.golden_logits "golden logits*" SHARED FIXTURES stories260K)  # run.c's float32 logits

# The F32 forward against a float64 NumPy forward written from the equations (verify/ref_forward.py)
# on random models that need no ../shared: ml_run --logits, build kernels and --reference, within 1e-4.
add_test(NAME reference.numpy COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/verify/ref_forward.py check --positions 24
         ${ML_MODELS_DIR}/random_gqa_f32.mlb ${ML_MODELS_DIR}/random_shared_f32.mlb
         -- ${CMAKE_CROSSCOMPILING_EMULATOR} $<TARGET_FILE:ml_run>)
set_tests_properties(reference.numpy PROPERTIES FIXTURES_REQUIRED random ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")

# ml_logits_test(<name> [EMULATOR cmd...] [ALSO "cmd|arg|..."...]): verify/logits_compare.py, the
# quantized models' ml_run logits byte-identical to its --reference run, under EMULATOR (default:
# the preset's) and each ALSO command (then the F32 logits must also agree across the commands).
# Every preset gets logits.identical (registered after cmake/tests/<family>.cmake, unless it did).
function(ml_logits_test name)
  cmake_parse_arguments(L "" "" "EMULATOR;ALSO" ${ARGN})
  if(NOT L_EMULATOR)
    set(L_EMULATOR ${CMAKE_CROSSCOMPILING_EMULATOR})
  endif()
  set(_also "")
  foreach(_e IN LISTS L_ALSO)
    list(APPEND _also --also "${_e}")
  endforeach()
  add_test(NAME ${name} COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/verify/logits_compare.py --models ${ML_MODELS_DIR}
           --shared ${ML_SHARED_DIR} ${_also} -- ${L_EMULATOR} $<TARGET_FILE:ml_run>)
  set(_fix random)
  if(EXISTS "${ML_SHARED_DIR}/models/stories260K/stories260K.bin")
    set(_fix "stories260K;random")  # stories260K's quantized models too; without them, random ones only
  endif()
  set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED "${_fix}" ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
endfunction()

# The Python binding (python/, cmake/Python.cmake) where this machine can load the build's library:
# python.package installs the package pip builds from this build's libml_<isa>.so into a folder
# (offline, Debian's pip and setuptools); python.binding runs its pytest suite (python/tests: golden
# text, chat, JSON schema, streaming, threads, errors, two models, garbage collection, the README
# examples of llama-cpp-python) on that folder, exiting 77 when a case skipped (python/tests/conftest.py).
if(TARGET ml_python_isa AND NOT CMAKE_CROSSCOMPILING)
  set(_ml_site "${CMAKE_BINARY_DIR}/python_site")
  add_test(NAME python.package COMMAND ${CMAKE_COMMAND} -E env LEGACY_ML_LIBS=${CMAKE_BINARY_DIR}
           ${ML_PYTHON} -m pip install -q --no-deps --no-build-isolation --no-index --upgrade --target ${_ml_site}
           ${PROJECT_SOURCE_DIR}/python)
  set_tests_properties(python.package PROPERTIES FIXTURES_SETUP python_site ENVIRONMENT "PIP_NO_CACHE_DIR=1;PIP_ROOT_USER_ACTION=ignore")
  add_test(NAME python.binding COMMAND ${ML_PYTHON} -m pytest -q -p no:cacheprovider ${PROJECT_SOURCE_DIR}/python/tests)
  set_tests_properties(python.binding PROPERTIES
    ENVIRONMENT "${ML_TEST_ENV};PYTHONPATH=${_ml_site};ML_BUILD_ISA=${ML_ISA}"
    FIXTURES_REQUIRED python_site SKIP_RETURN_CODE 77)
endif()
# python.glibc_compat: an ML_PORTABLE build's libraries need nothing above their archive's glibc line
# (2.17; RISC-V 2.27), and what cmake/glibc_compat.c puts in their place works
# (verify/glibc_compat_test.py; the probe library verify/glibc_compat_probe.cc is linked as they
# are). Cross presets have no Python of their architecture: verify/glibc_compat_run.c loads the
# probe there, under the preset's emulator.
if(TARGET ml_python_isa AND ML_PORTABLE AND CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|aarch64|armv7l|riscv64)$")
  add_library(ml_compat_probe SHARED verify/glibc_compat_probe.cc)
  set_target_properties(ml_compat_probe PROPERTIES OUTPUT_NAME glibc_compat_probe)  # not libml_*: python/setup.py packs those
  ml_portable_shared(ml_compat_probe)
  set(_ml_compat_env "ML_COMPAT_ARCH=${CMAKE_SYSTEM_PROCESSOR}")
  if(CMAKE_CROSSCOMPILING)
    add_executable(ml_compat_run verify/glibc_compat_run.c)
    target_link_libraries(ml_compat_run PRIVATE ${CMAKE_DL_LIBS})
    list(APPEND _ml_compat_env "ML_COMPAT_RUN=${ML_EMULATOR_STR}|$<TARGET_FILE:ml_compat_run>")
  endif()
  add_test(NAME python.glibc_compat COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/verify/glibc_compat_test.py
           $<TARGET_FILE:ml_compat_probe> $<TARGET_FILE:ml_python_isa> $<TARGET_FILE:ml_python_probe>)
  set_tests_properties(python.glibc_compat PROPERTIES ENVIRONMENT "${_ml_compat_env}")
endif()

# Command-line behaviour of ml_run (golden text, errors, --logits), in Python.
# verify/run_unittest.py: unittest's verbose output, exit 77 (Skipped) when any test was skipped.
if(ML_ABI_SUITES)
  add_test(NAME cli COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/verify/run_unittest.py ${PROJECT_SOURCE_DIR}/verify/tests/test_cli.py)
  set_tests_properties(cli PROPERTIES
    ENVIRONMENT "${ML_TEST_ENV};ML_RUN=$<TARGET_FILE:ml_run>;ML_EMULATOR=${ML_EMULATOR_STR};ML_ISA=${ML_ISA};ML_THREADS=${ML_THREADS}"
    FIXTURES_REQUIRED "stories260K;random" SKIP_RETURN_CODE 77)
endif()

# GGUF files run as they are (runtime/gguf.h): golden text from stories260K.gguf alone, exported
# GGUFs bit for bit against the .mlb convert.py makes of them, hostile files (verify/tests/test_gguf.py).
if(ML_ABI_SUITES)
  add_test(NAME gguf.cli COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/verify/run_unittest.py ${PROJECT_SOURCE_DIR}/verify/tests/test_gguf.py)
  set_tests_properties(gguf.cli PROPERTIES
    ENVIRONMENT "${ML_TEST_ENV};ML_RUN=$<TARGET_FILE:ml_run>;ML_TOKENIZE=$<TARGET_FILE:ml_tokenize>;ML_EMULATOR=${ML_EMULATOR_STR};PYTHONDONTWRITEBYTECODE=1"
    SKIP_RETURN_CODE 77 TIMEOUT 900)
endif()

# --hf ORG/REPO[:QUANT] (hub/hub.h, issue 39): hub/sha256.cc on the standard's examples; ml_run,
# ml_bench and ml_server against a stand-in hub on loopback (verify/hub_stub.py, verify/tests/test_hub.py).
# Builds without a downloader (the cross presets find no libcurl) check the one line saying so.
ml_test_group(hub.sha256 "[sha256]")
ml_hub_tests()
# --- chat (issue 15 item 1): prompt formats and ml_run --chat -------------------------------------
# chat.render: runtime/text/chat.cc's renderer against what a real Jinja engine renders for the real
# templates (verify/data/chat_expected.txt, written by verify/chat_oracle.js); chat.api: the C API on
# a llama2.c tokenizer; chat.oracle / chat.jinja2: the committed renderings are what @huggingface/jinja
# (tools/npm) and Python's jinja2 render now; chat.cli: ml_run --chat end to end (verify/tests/test_chat.py).
ml_test_group(chat.render "[chat]")
ml_test_group(chat.api "[chat_api]" SHARED FIXTURES stories260K)
if(ML_NODE_EXE AND ML_ONCE)
  add_test(NAME chat.oracle COMMAND ${ML_NODE_EXE} ${PROJECT_SOURCE_DIR}/verify/chat_oracle.js --check)
  set_tests_properties(chat.oracle PROPERTIES SKIP_RETURN_CODE 77)
endif()
if(ML_ONCE)  # the same file against Python's jinja2 (python3-jinja2)
  add_test(NAME chat.jinja2 COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/verify/chat_jinja2.py)
  set_tests_properties(chat.jinja2 PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
endif()
# chat.tools (issue 34 item 4): tools, tool calls and tool results rendered by ml::chat_render with
# structured/tools.h against Python jinja2's renderings of the real Qwen2.5, Qwen3 and Llama 3.1/3.2
# templates (verify/data/chat_tools_expected.json), reply parsing and the forced call's schema;
# chat.tools.jinja2: that file is what jinja2 renders now (verify/chat_tools_jinja2.py).
if(ML_ARCH_GENERIC)  # the same C++ text code on every ISA: not again under sve/rvv emulation
  ml_test_group(chat.tools "[chat_tools],[chat_tools_parse]")
endif()
if(ML_ONCE)
  add_test(NAME chat.tools.jinja2 COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/verify/chat_tools_jinja2.py)
  set_tests_properties(chat.tools.jinja2 PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
endif()
# chat.cli exercises ml_run's chat loop, the same C++ on every ISA: one build per ABI (above).
if(ML_ABI_SUITES)
  add_test(NAME chat.cli COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/verify/run_unittest.py ${PROJECT_SOURCE_DIR}/verify/tests/test_chat.py)
  set_tests_properties(chat.cli PROPERTIES
    ENVIRONMENT "${ML_TEST_ENV};ML_RUN=$<TARGET_FILE:ml_run>;ML_TOKENIZE=$<TARGET_FILE:ml_tokenize>;ML_EMULATOR=${ML_EMULATOR_STR}"
    FIXTURES_REQUIRED "stories260K;random" SKIP_RETURN_CODE 77 TIMEOUT 900)
endif()
# --- end of chat ----------------------------------------------------------------------------------

# Our F32 logits (scalar reference and build kernels) against a float64 NumPy forward written from
# Hugging Face's Qwen2 / Llama 3 / Qwen3 equations (verify/hf_forward.py), on the qwen2-tiny and
# llama3-tiny fixtures and on a random tiny Qwen3 (head_dim != dim / heads) written as an HF folder
# and as a llama.cpp-style GGUF, each converted: max abs <= 1e-4 over 32 positions; Q8_0/Q4_0
# top-1 agreement printed.
if(ML_ARCH_GENERIC)
  add_test(NAME reference.hf COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/verify/tests/test_hf_reference.py -v)
  set_tests_properties(reference.hf PROPERTIES
    ENVIRONMENT "${ML_TEST_ENV};ML_RUN=$<TARGET_FILE:ml_run>;ML_EMULATOR=${ML_EMULATOR_STR}"
    FIXTURES_REQUIRED random)
endif()

# ml_bench runs (numbers are not checked: performance is measured, not tested): every kernel of
# the table gets a row, decode runs at 1 and 2 threads.
add_test(NAME bench.kernels COMMAND ml_bench kernels --quick --seconds 0.001 --pool-mb 32 --tsv)
# (a panel16 streaming row of matvec_q4, then, anywhere after it, the last kernel: exp_f32)
set_tests_properties(bench.kernels PROPERTIES PASS_REGULAR_EXPRESSION "kernel\tmatvec_q4\t[^\n]*\tpanel16\tdram[^$]*kernel\texp_f32\t")
if(ML_THREADS)
  add_test(NAME bench.decode COMMAND ml_bench decode ${ML_MODELS_DIR}/random_gqa_q4_0.mlb -t 1,2 -n 4 --tsv)
  set_tests_properties(bench.decode PROPERTIES PASS_REGULAR_EXPRESSION "decode\t.*\t2\t" FIXTURES_REQUIRED random)
  # --load: one busy-loop process beside a 2-thread decode, the pool's profile after the row. The
  # busy process holds ml_bench's output pipe: the test ends in time only if ml_bench ends it.
  if(NOT CMAKE_CROSSCOMPILING AND NOT EMSCRIPTEN)
    add_test(NAME bench.decode_load COMMAND ml_bench decode ${ML_MODELS_DIR}/random_gqa_q4_0.mlb -t 2 -n 4 --load 1
             --profile --tsv)
    set_tests_properties(bench.decode_load PROPERTIES FIXTURES_REQUIRED random TIMEOUT 60 PASS_REGULAR_EXPRESSION
                         "decode\t[^\n]*\t2\t[^\n]*\n# profile: [1-9][0-9]* jobs/step[^\n]*\n#   step [1-9][0-9]* us; caller alone between jobs")
  endif()
else()
  add_test(NAME bench.decode COMMAND ml_bench decode ${ML_MODELS_DIR}/random_gqa_q4_0.mlb -t 1 -n 4 --tsv)
  set_tests_properties(bench.decode PROPERTIES PASS_REGULAR_EXPRESSION "decode\t.*\t1\t" FIXTURES_REQUIRED random)
endif()

# The converter's own tests (tools/tests, Python only, the same in every build): in the scalar
# preset only, to keep the preset matrix fast. tools/bpe.py's (test_bpe.py) are an entry of their
# own, tools.python.bpe: the mutation audit runs them alone for its Python mutants (tools/mutants.sh).
if(ML_ONCE)  # not wasm-scalar, the sanitizers or fuzz: the same Python again
  add_test(NAME tools.python COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/verify/run_unittest.py tools/tests
           --except test_bpe.py WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  add_test(NAME tools.python.bpe COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/verify/run_unittest.py
           tools/tests/test_bpe.py WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(tools.python tools.python.bpe PROPERTIES SKIP_RETURN_CODE 77
    ENVIRONMENT "${ML_TEST_ENV};ML_RUN=$<TARGET_FILE:ml_run>;ML_EMULATOR=${ML_EMULATOR_STR}")
endif()

# ml_guard_test(<name> refuse|golden <emulator command list>): runs ml_run under an emulator that
# models another CPU (verify/guard_test.py): `refuse` expects the CPU guard's one-line refusal and
# ML_E_ISA's exit status (never a signal), `golden` expects llama2.c's stories260K text.
function(ml_guard_test name mode)
  set(_args ${mode})
  if(mode STREQUAL "refuse")
    list(APPEND _args --isa ${ML_ISA})
    set(_fix "")
  else()
    list(APPEND _args --model ${ML_MODELS_DIR}/stories260K_f32.mlb
         --tokenizer ${ML_SHARED_DIR}/models/stories260K/tok512.bin
         --golden ${ML_SHARED_DIR}/golden/once_upon_a_time.txt)
    set(_fix stories260K)
  endif()
  add_test(NAME ${name} COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/verify/guard_test.py ${_args} -- ${ARGN}
           $<TARGET_FILE:ml_run>)
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
  if(_fix)
    set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED ${_fix})
  endif()
endfunction()

# The guard checks exactly the features the build's flags enable (simd/isa_table.h vs the
# compiler's predefined macros).
string(REPLACE ";" " " _ml_flags_str "${ISA_FLAGS}")
add_test(NAME isa.flags_vs_guard COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/verify/flags_test.py "${ISA_FEATURES}" --
         ${CMAKE_CXX_COMPILER} ${CMAKE_CXX_COMPILER_ARG1} ${ISA_FLAGS})

# Tests of one architecture family (guard tests under emulated CPUs, extra vector lengths, ...).
ml_arch_family("${ISA_ARCH}" ML_FAMILY)
if(EMSCRIPTEN)
  set(ML_FAMILY wasm)  # wasm-scalar is ML_ISA=scalar (arch `any`) built with Emscripten
endif()
# ml_qemu_cpu(<out> <cpu model>): the preset's qemu-user (cross builds) with another -cpu, same sysroot.
if(CMAKE_CROSSCOMPILING_EMULATOR)
  list(GET CMAKE_CROSSCOMPILING_EMULATOR 0 ML_QEMU)
endif()
function(ml_qemu_cpu out cpu)
  set(${out} "${ML_QEMU};-cpu;${cpu};-L;${CMAKE_FIND_ROOT_PATH}" PARENT_SCOPE)
endfunction()

# The CPU guard under the qemu CPU models of the ISA table's run and refuse columns
# (simd/isa_table.h): guard.golden_on_<cpu> prints llama2.c's text, guard.refuses_<cpu> the guard's
# one-line refusal. Cross builds: the preset's qemu-user with another -cpu (the first run model is
# the preset's emulator itself, which runs every test). x86-64 hosts: qemu-x86_64 for the x86 rows
# and scalar. WebAssembly: none.
set(_ml_guard_run ${ISA_RUN})
set(_ml_guard_qemu "")
if(EMSCRIPTEN)
  set(_ml_guard_run "")
  set(ISA_REFUSE "")
elseif(CMAKE_CROSSCOMPILING)
  if(_ml_guard_run)
    list(REMOVE_AT _ml_guard_run 0)
  endif()
  set(_ml_guard_qemu ${ML_QEMU};-cpu;<cpu>;-L;${CMAKE_FIND_ROOT_PATH})
elseif(ISA_ARCH STREQUAL "x86_64" OR CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64)$")
  find_program(ML_QEMU_X86 qemu-x86_64)
  if(NOT ML_QEMU_X86 AND (_ml_guard_run OR ISA_REFUSE))
    add_test(NAME guard.qemu_missing COMMAND ${CMAKE_COMMAND} -E echo
             "qemu-x86_64 not found: the CPU-guard tests cannot run (tools/setup.sh --all installs qemu-user)")
    set_tests_properties(guard.qemu_missing PROPERTIES WILL_FAIL ON)  # a visible failure, not a skip
  elseif(ML_QEMU_X86)
    set(_ml_guard_qemu ${ML_QEMU_X86};-cpu;<cpu>)
  endif()
endif()
if(_ml_guard_qemu)
  foreach(_mode golden refuse)
    if(_mode STREQUAL "golden")
      set(_cpus ${_ml_guard_run})
      set(_prefix guard.golden_on_)
    else()
      set(_cpus ${ISA_REFUSE})
      set(_prefix guard.refuses_)
    endif()
    foreach(_cpu IN LISTS _cpus)
      string(REGEX REPLACE "[,=]" "-" _tname "${_prefix}${_cpu}")
      string(REPLACE "<cpu>" "${_cpu}" _cmd "${_ml_guard_qemu}")
      ml_guard_test(${_tname} ${_mode} ${_cmd})
    endforeach()
  endforeach()
endif()

if(ML_FAMILY AND EXISTS "${PROJECT_SOURCE_DIR}/cmake/tests/${ML_FAMILY}.cmake")
  include("${PROJECT_SOURCE_DIR}/cmake/tests/${ML_FAMILY}.cmake")
endif()
if(NOT TEST logits.identical)
  ml_logits_test(logits.identical)
endif()

# ---- ml_server (server/; only where it is built: native, cpp-httplib and nlohmann-json found).
# verify/tests/test_server.py: the endpoints, greedy text = ml_run's, slots, queue, disconnects, API
# key and every bad-input case (server); the bounded load test (server.load: 16 streaming clients,
# a quarter disconnecting, ml_run's text, VmRSS +<= 1 MiB after warm-up, < 60 s); the official openai npm
# client from tools/npm (server.openai, node; skipped with 77 when tools/setup.sh did not install it);
# /metrics (server.metrics, node) and the chat page with CORS in Chromium (server.page, avx2 only).
if(ML_HAVE_SERVER)
  set(_ml_server_env "${ML_TEST_ENV};ML_SERVER=$<TARGET_FILE:ml_server>;ML_RUN=$<TARGET_FILE:ml_run>;ML_TOKENIZE=$<TARGET_FILE:ml_tokenize>;ML_PYTHON=${ML_PYTHON};ML_SANITIZE=${ML_SANITIZE}")
  if(ML_SANITIZE MATCHES "thread")  # the tsan test preset's options plus server/tsan.supp (uninstrumented cpp-httplib)
    string(APPEND _ml_server_env ";TSAN_OPTIONS=halt_on_error=1:abort_on_error=0:exitcode=66:second_deadlock_stack=1:history_size=4:suppressions=${PROJECT_SOURCE_DIR}/server/tsan.supp")
  endif()
  add_test(NAME server COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/verify/run_unittest.py
           ${PROJECT_SOURCE_DIR}/verify/tests/test_server.py)
  set_tests_properties(server PROPERTIES ENVIRONMENT "${_ml_server_env};ML_SERVER_TESTS=functional"
                       FIXTURES_REQUIRED stories260K SKIP_RETURN_CODE 77 TIMEOUT 900)
  add_test(NAME server.load COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/verify/run_unittest.py
           ${PROJECT_SOURCE_DIR}/verify/tests/test_server.py)
  set_tests_properties(server.load PROPERTIES ENVIRONMENT "${_ml_server_env};ML_SERVER_TESTS=load"
                       FIXTURES_REQUIRED stories260K SKIP_RETURN_CODE 77 TIMEOUT 300 RUN_SERIAL TRUE)
  ml_test_group(server.sibling "[sibling]" FIXTURES random)  # ml_open_sibling (verify/tests/test_sibling.cc)
  if(ML_NODE_EXE)
    add_test(NAME server.openai COMMAND ${ML_NODE_EXE} ${PROJECT_SOURCE_DIR}/verify/server_openai.js)
    set_tests_properties(server.openai PROPERTIES ENVIRONMENT "${_ml_server_env}" FIXTURES_REQUIRED stories260K
                         SKIP_RETURN_CODE 77 TIMEOUT 600)
    # response_format: 30 schemas x 3 seeds at temperature 1 on a random model, each reply checked by ajv
    add_test(NAME server.json_schema COMMAND ${ML_NODE_EXE} ${PROJECT_SOURCE_DIR}/verify/server_json_schema.js)
    set_tests_properties(server.json_schema PROPERTIES ENVIRONMENT "${_ml_server_env}" SKIP_RETURN_CODE 77 TIMEOUT 600)
    # GET /metrics parsed by parse-prometheus-text-format (tools/npm), exact counters after known requests
    add_test(NAME server.metrics COMMAND ${ML_NODE_EXE} ${PROJECT_SOURCE_DIR}/verify/server_metrics.js)
    set_tests_properties(server.metrics PROPERTIES ENVIRONMENT "${_ml_server_env}" FIXTURES_REQUIRED stories260K
                         SKIP_RETURN_CODE 77 TIMEOUT 120)
    # The chat page and CORS in headless Chromium (screenshots in build/<preset>/server_page): the
    # page and the headers are the same in every build, so the avx2 preset runs it.
    if(ML_ISA STREQUAL "avx2" AND NOT ML_SANITIZE)
      add_test(NAME server.page COMMAND sh ${PROJECT_SOURCE_DIR}/verify/server_page.sh ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR})
      set_tests_properties(server.page PROPERTIES ENVIRONMENT "${_ml_server_env}" TIMEOUT 300)
    endif()
    # tools (issue 34 item 4): the openai client's tool-calling flow, forced calls validated by ajv
    add_test(NAME server.tools COMMAND ${ML_NODE_EXE} ${PROJECT_SOURCE_DIR}/verify/server_tools.js)
    set_tests_properties(server.tools PROPERTIES ENVIRONMENT "${_ml_server_env}" SKIP_RETURN_CODE 77 TIMEOUT 300)
  endif()
endif()

# The longest tests start first (ctest runs a higher COST first; a fresh build folder has no timings
# of earlier runs), so a preset does not end with one of them running alone; under qemu they take
# minutes.
foreach(_t e2e.random e2e.batch e2e.teacher_forced e2e.panels e2e.threads e2e.stories260K logits.identical
           logits.identical.sve256 logits.identical.sve512 tools.python chat.cli cli reference.hf)
  if(TEST ${_t})
    set_tests_properties(${_t} PROPERTIES COST 100)
  endif()
endforeach()
