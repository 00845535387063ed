# Assembles the served folder (cmake -P, run by the `www` target of cmake/wasm.cmake at every build):
#   -DSRC=<repo>/wasm -DWWW=<build>/www -DMODULE=<this build's ml_web_<variant>.mjs> -DVARIANT=simd128|scalar
#   -DSCALAR_DIR=<wasm-scalar build folder> (optional: its ml_web_scalar module is served too)
#   -DTHREADS_DIR=<wasm-simd128-threads build folder> (optional: its ml_web_simd128_threads module,
#   with its pthread Worker script, is served too)
# Writes www/modules.json: {"simd128": true|false, "scalar": true|false, "simd128_threads": ...},
# which the pages read to choose a module (wasm/ml.js, wasm/loader.js pickVariant), and builds.json,
# the same for the package (wasm/package/engine.js).
foreach(f index.html verify.html demo.html ml.js loader.js verify.js demo.js style.css)
  configure_file("${SRC}/${f}" "${WWW}/${f}" COPYONLY)
endforeach()
# demo.html runs on the npm package's API (wasm/package: the engine in a Worker) served from here;
# its engine loads models with wasm/loader.js (copied above: one loader for the pages and the package).
foreach(f index.js engine.js worker.js)
  configure_file("${SRC}/package/${f}" "${WWW}/${f}" COPYONLY)
endforeach()
get_filename_component(_dir "${MODULE}" DIRECTORY)
get_filename_component(_stem "${MODULE}" NAME_WE)
foreach(ext mjs wasm worker.js)
  if(EXISTS "${_dir}/${_stem}.${ext}")  # worker.js: the threaded build only
    configure_file("${_dir}/${_stem}.${ext}" "${WWW}/${_stem}.${ext}" COPYONLY)
  endif()
endforeach()
set(_have_simd128 false)
set(_have_scalar false)
set(_have_simd128_threads false)
set(_have_${VARIANT} true)
if(THREADS_DIR AND EXISTS "${THREADS_DIR}/ml_web_simd128_threads.worker.js")
  foreach(ext mjs wasm worker.js)
    configure_file("${THREADS_DIR}/ml_web_simd128_threads.${ext}" "${WWW}/ml_web_simd128_threads.${ext}" COPYONLY)
  endforeach()
  set(_have_simd128_threads true)
endif()
if(VARIANT STREQUAL "simd128")
  if(SCALAR_DIR AND EXISTS "${SCALAR_DIR}/ml_web_scalar.mjs" AND EXISTS "${SCALAR_DIR}/ml_web_scalar.wasm")
    foreach(ext mjs wasm)
      configure_file("${SCALAR_DIR}/ml_web_scalar.${ext}" "${WWW}/ml_web_scalar.${ext}" COPYONLY)
    endforeach()
    set(_have_scalar true)
  else()
    file(REMOVE "${WWW}/ml_web_scalar.mjs" "${WWW}/ml_web_scalar.wasm")
    message(STATUS "www: no scalar module in '${SCALAR_DIR}' (build the wasm-scalar preset first): "
                   "browsers without WASM SIMD will be told so")
  endif()
else()
  file(REMOVE "${WWW}/ml_web_simd128.mjs" "${WWW}/ml_web_simd128.wasm")
endif()
file(WRITE "${WWW}/modules.json.tmp"
     "{\"simd128\": ${_have_simd128}, \"scalar\": ${_have_scalar}, \"simd128_threads\": ${_have_simd128_threads}}\n")
file(WRITE "${WWW}/builds.json.tmp" "{\"simd128\": ${_have_simd128}, \"scalar\": ${_have_scalar}, \"threaded\": ${_have_simd128_threads}}\n")
file(COPY_FILE "${WWW}/builds.json.tmp" "${WWW}/builds.json" ONLY_IF_DIFFERENT)
file(REMOVE "${WWW}/builds.json.tmp")
file(COPY_FILE "${WWW}/modules.json.tmp" "${WWW}/modules.json" ONLY_IF_DIFFERENT)
file(REMOVE "${WWW}/modules.json.tmp")
