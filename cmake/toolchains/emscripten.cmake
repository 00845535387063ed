# Cross toolchain: WebAssembly with Debian's Emscripten (3.1.6, clang 14). Used by the wasm-scalar
# and wasm-simd128 presets (cmake/presets/wasm.json). Wraps Emscripten's own toolchain file and
# adds what Debian's packaging needs (docs/toolchain.md):
#   - emcc runs node scripts when it links at -O2 and above (acorn), found only with
#     NODE_PATH=/usr/share/nodejs: every link goes through `env NODE_PATH=...`, so a plain `ninja`
#     in the build folder works too, not only `cmake --build --preset`.
#   - ctest runs the node builds of ml_tests/ml_run with node --no-experimental-fetch (node 20's
#     fetch() cannot load the .wasm from a file path). cmake/wasm.cmake links them with NODERAWFS,
#     so they read and write host files as native programs do.
# Link options of the programs and the browser module: cmake/wasm.cmake.
if(DEFINED ENV{EMSCRIPTEN_ROOT} AND EXISTS "$ENV{EMSCRIPTEN_ROOT}/cmake/Modules/Platform/Emscripten.cmake")
  set(_ml_em_root "$ENV{EMSCRIPTEN_ROOT}")
else()
  set(_ml_em_root /usr/share/emscripten)
endif()
if(NOT EXISTS "${_ml_em_root}/cmake/Modules/Platform/Emscripten.cmake")
  message(FATAL_ERROR "Emscripten not found in ${_ml_em_root} (apt-get install emscripten, or set EMSCRIPTEN_ROOT)")
endif()

find_program(ML_NODE NAMES node nodejs REQUIRED)
if(NOT DEFINED CMAKE_CROSSCOMPILING_EMULATOR)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${ML_NODE};--no-experimental-fetch" CACHE STRING "runs the wasm programs")
endif()

include("${_ml_em_root}/cmake/Modules/Platform/Emscripten.cmake")

set(ML_NODE_PATH "/usr/share/nodejs" CACHE PATH "NODE_PATH for emcc's node scripts (Debian: acorn lives here)")
set(CMAKE_C_LINKER_LAUNCHER env "NODE_PATH=${ML_NODE_PATH}")
set(CMAKE_CXX_LINKER_LAUNCHER env "NODE_PATH=${ML_NODE_PATH}")
