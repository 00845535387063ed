# Assembles the npm package folder (cmake -P, run by the `npm_package` target of cmake/npm.cmake):
#   -DSRC=<repo>/wasm -DOUT=<build>/package/legacy-ml -DVERSION=<project version>
#   -DSIMD=<this build's ml_web_simd128.mjs> -DSCALAR_DIR=<the wasm-scalar build folder>
#   -DTHREADS_DIR=<the wasm-simd128-threads build folder>
# Copies the package's sources (wasm/package/), the thin layer wasm/ml.js, the model loader
# wasm/loader.js (the pages' loader too), the three modules (the threaded one with its pthread
# Worker script), and writes builds.json ({"simd128": true, "scalar": true, "threaded": true}),
# which engine.js reads to choose a build.
foreach(f index.js index.d.ts engine.js worker.js README.md)
  configure_file("${SRC}/package/${f}" "${OUT}/${f}" COPYONLY)
endforeach()
foreach(f ml.js loader.js)
  configure_file("${SRC}/${f}" "${OUT}/${f}" COPYONLY)
endforeach()
set(ML_VERSION "${VERSION}")
configure_file("${SRC}/package/package.json.in" "${OUT}/package.json" @ONLY)
get_filename_component(_dir "${SIMD}" DIRECTORY)
if(NOT SCALAR_DIR OR NOT EXISTS "${SCALAR_DIR}/ml_web_scalar.mjs" OR NOT EXISTS "${SCALAR_DIR}/ml_web_scalar.wasm")
  message(FATAL_ERROR "npm_package: no ml_web_scalar module in '${SCALAR_DIR}': build the wasm-scalar preset's ml_web first "
                      "(browsers without WebAssembly SIMD need it)")
endif()
if(NOT THREADS_DIR OR NOT EXISTS "${THREADS_DIR}/ml_web_simd128_threads.worker.js")
  message(FATAL_ERROR "npm_package: no ml_web_simd128_threads module in '${THREADS_DIR}': build the wasm-simd128-threads "
                      "preset's ml_web first (cross-origin-isolated pages run it)")
endif()
foreach(ext mjs wasm)
  configure_file("${_dir}/ml_web_simd128.${ext}" "${OUT}/ml_web_simd128.${ext}" COPYONLY)
  configure_file("${SCALAR_DIR}/ml_web_scalar.${ext}" "${OUT}/ml_web_scalar.${ext}" COPYONLY)
endforeach()
foreach(ext mjs wasm worker.js)
  configure_file("${THREADS_DIR}/ml_web_simd128_threads.${ext}" "${OUT}/ml_web_simd128_threads.${ext}" COPYONLY)
endforeach()
file(WRITE "${OUT}/builds.json" "{\"simd128\": true, \"scalar\": true, \"threaded\": true}\n")
