# Assembles the npm package folder (cmake -P, run by the `npm_package` target of cmake/npm.cmake):
#   -DSRC=<repo>/wasm -DOUT=<build>/package/legacy-ml -DVERSION=<project version>
#   -DSIMD=<this build's ml_web_simd128.mjs> -DSCALAR_DIR=<the wasm-scalar build folder>
# Copies the package's sources (wasm/package/), the thin layer wasm/ml.js, both modules, and writes
# builds.json ({"simd128": true, "scalar": true, "threaded": false}), which engine.js reads to choose
# a build. The threaded build (issue 35 item 4) goes in as "threaded" with its module files.
foreach(f index.js index.d.ts engine.js worker.js loader.js README.md)
  configure_file("${SRC}/package/${f}" "${OUT}/${f}" COPYONLY)
endforeach()
configure_file("${SRC}/ml.js" "${OUT}/ml.js" COPYONLY)
set(ML_VERSION "${VERSION}")
configure_file("${SRC}/package/package.json.in" "${OUT}/package.json" @ONLY)
get_filename_component(_dir "${SIMD}" DIRECTORY)
if(NOT SCALAR_DIR OR NOT EXISTS "${SCALAR_DIR}/ml_web_scalar.mjs" OR NOT EXISTS "${SCALAR_DIR}/ml_web_scalar.wasm")
  message(FATAL_ERROR "npm_package: no ml_web_scalar module in '${SCALAR_DIR}': build the wasm-scalar preset's ml_web first "
                      "(browsers without WebAssembly SIMD need it)")
endif()
foreach(ext mjs wasm)
  configure_file("${_dir}/ml_web_simd128.${ext}" "${OUT}/ml_web_simd128.${ext}" COPYONLY)
  configure_file("${SCALAR_DIR}/ml_web_scalar.${ext}" "${OUT}/ml_web_scalar.${ext}" COPYONLY)
endforeach()
file(WRITE "${OUT}/builds.json" "{\"simd128\": true, \"scalar\": true, \"threaded\": false}\n")
