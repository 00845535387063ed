# ml_hub: the model downloader behind --hf ORG/REPO[:QUANT] (hub/hub.h, docs/hub.md), linked into
# ml_run, ml_bench and ml_server; the runtime library never links it. Its HTTP transport
# (hub/http.h): WinHTTP on Windows (mingw-w64's libwinhttp; part of Windows, no DLL to ship),
# libcurl where find_package(CURL) finds it (Debian: libcurl4-openssl-dev), else none
# (hub/http_none.cc: --hf then says in one line that this build has no downloader and why; files
# already in the cache still run). Portable builds (ML_PORTABLE, cmake/Portable.cmake: the static
# programs of the downloads; every Linux ISA preset, the cross ARM/RISC-V ones included) run the
# system's `curl` program instead (hub/http_curl_program.cc): a static program cannot link libcurl,
# and a cross build finds no libcurl for its architecture. The file listing is JSON: nlohmann-json
# (header-only, through the include shim (CMakeLists.txt), so cross and wasm compilers never see /usr/include).
set(ML_HUB_SOURCES hub/hub.cc hub/sha256.cc)
set(ML_HUB_NONE_REASON "")
if(WIN32)
  list(APPEND ML_HUB_SOURCES hub/http_winhttp.cc)
  set(ML_HUB_TRANSPORT WinHTTP)
elseif(EMSCRIPTEN)
  set(ML_HUB_NONE_REASON "a WebAssembly build has no downloader")
elseif(ML_PORTABLE)
  list(APPEND ML_HUB_SOURCES hub/http_curl_program.cc)
  set(ML_HUB_TRANSPORT "the curl program")
else()
  find_package(CURL QUIET)
  if(CURL_FOUND)
    list(APPEND ML_HUB_SOURCES hub/http_curl.cc)
    set(ML_HUB_TRANSPORT "libcurl ${CURL_VERSION_STRING}")
  elseif(CMAKE_CROSSCOMPILING)
    set(ML_HUB_NONE_REASON "it is a cross build and no libcurl for its target was found")
  else()
    set(ML_HUB_NONE_REASON "it was configured without libcurl (apt-get install libcurl4-openssl-dev, then configure again)")
  endif()
endif()
if(ML_HUB_NONE_REASON)
  list(APPEND ML_HUB_SOURCES hub/http_none.cc)
  set(ML_HUB_TRANSPORT "none")
endif()
add_library(ml_hub STATIC ${ML_HUB_SOURCES})
target_include_directories(ml_hub PUBLIC "$<BUILD_INTERFACE:${ML_ROOT_hub}>")
target_link_libraries(ml_hub PUBLIC ml_runtime)  # runtime/file_map.h: UTF-8 paths on Windows too
if(WIN32)
  target_link_libraries(ml_hub PRIVATE winhttp)
elseif(ML_PORTABLE)
  target_compile_definitions(ml_hub PUBLIC ML_HUB_CURL_PROGRAM=1)  # the programs' --help says so
elseif(CURL_FOUND)
  target_link_libraries(ml_hub PRIVATE CURL::libcurl)
  target_compile_definitions(ml_hub PUBLIC ML_HUB_CURL=1)  # the programs' --help says "libcurl"
else()
  target_compile_definitions(ml_hub PRIVATE "ML_HTTP_NONE_REASON=\"${ML_HUB_NONE_REASON}\"")
endif()
if(ML_HUB_NONE_REASON)
  message(STATUS "legacy-ml: --hf has no downloader in this build: ${ML_HUB_NONE_REASON}")
else()
  message(STATUS "legacy-ml: --hf downloads through ${ML_HUB_TRANSPORT}")
endif()

# ml_hub_tests(): the CTest entries of --hf (cmake/Tests.cmake and, under Wine, cmake/tests/windows.cmake).
# hub: verify/tests/test_hub.py, every program run through the preset's emulator, in one build per
# transport: scalar (the curl program), the sanitizer build (libcurl, under ASan/UBSan) and win-sse2
# (WinHTTP). hub/ and the programs' own sources are compiled without ISA flags (CMakeLists.txt:
# ml_program), so the other x86 builds would run the same objects again: they and the cross presets
# check one request through the curl program (hub.curl_program), win-avx2 and win-avx512vnni none.
# hub.no_downloader: a build without a transport says so in one line instead.
function(ml_hub_tests)
  if(ML_HUB_TRANSPORT STREQUAL "none")
    add_test(NAME hub.no_downloader COMMAND ml_run --hf org/repo:Q4_0 --hf-endpoint http://127.0.0.1:9)
    set_tests_properties(hub.no_downloader PROPERTIES  # exactly one line
      ENVIRONMENT "ML_CACHE=${CMAKE_BINARY_DIR}/hub-no-downloader-cache"
      PASS_REGULAR_EXPRESSION "^ml_run: --hf org/repo: this build has no downloader: [^\n]+\n$")
    return()
  endif()
  if(WIN32 AND NOT ML_ISA STREQUAL "sse2")
    return()
  endif()
  if(ML_PORTABLE AND NOT (ML_ISA STREQUAL "scalar" AND NOT CMAKE_CROSSCOMPILING))
    # The transport is the same C++ as the scalar preset's (its `hub` runs the whole suite); here
    # one request proves that the program (emulated in the cross presets) starts the host's curl
    # and maps its failure to one line (hub/http_curl_program.cc), in seconds, not minutes.
    add_test(NAME hub.curl_program COMMAND ml_run --hf org/repo:Q4_0 --hf-endpoint http://127.0.0.1:9)
    set_tests_properties(hub.curl_program PROPERTIES
      ENVIRONMENT "ML_CACHE=${CMAKE_BINARY_DIR}/hub-curl-program-cache"
      PASS_REGULAR_EXPRESSION "^ml_run: listing the files of org/repo: cannot connect to 127\\.0\\.0\\.1:9: could not connect \\(curl exit status 7\\)\n$")
    return()
  endif()
  set(_env "${ML_TEST_ENV};ML_RUN=$<TARGET_FILE:ml_run>;ML_BENCH=$<TARGET_FILE:ml_bench>;ML_EMULATOR=${ML_EMULATOR_STR}")
  if(ML_HAVE_SERVER)
    string(APPEND _env ";ML_SERVER=$<TARGET_FILE:ml_server>")
  endif()
  add_test(NAME hub COMMAND ${ML_PYTHON} ${PROJECT_SOURCE_DIR}/verify/run_unittest.py ${PROJECT_SOURCE_DIR}/verify/tests/test_hub.py)
  set_tests_properties(hub PROPERTIES ENVIRONMENT "${_env}" SKIP_RETURN_CODE 77 TIMEOUT 600)
  if(WIN32)
    set_tests_properties(hub PROPERTIES FIXTURES_REQUIRED wine)
  endif()
endfunction()
