# The npm package `legacy-ml` (issue 35; wasm/package/README.md is its documentation), made by the
# wasm-simd128 preset, which also holds the wasm-scalar build's module (ML_WASM_SCALAR_DIR) and the
# wasm-simd128-threads build's (ML_WASM_THREADS_DIR):
#   cmake --build --preset wasm-simd128 --target npm_package
# assembles build/wasm-simd128/package/legacy-ml/ (wasm/package/assemble.cmake) and runs `npm pack`
# there: build/wasm-simd128/package/legacy-ml-<version>.tgz. Tests: wasm.npm (cmake/tests/wasm.cmake).
# Included by cmake/wasm.cmake's ml_wasm_targets (deferred: ml_web exists) in the simd128 build.
find_program(ML_NPM_EXE npm)
set(_pkg "${CMAKE_BINARY_DIR}/package")
set(ML_NPM_TARBALL "${_pkg}/legacy-ml-${PROJECT_VERSION}.tgz")
if(ML_NPM_EXE)
  file(GLOB _pkg_sources CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/wasm/package/*")
  add_custom_target(npm_package
    COMMAND ${CMAKE_COMMAND} -E rm -rf ${_pkg}/legacy-ml
    COMMAND ${CMAKE_COMMAND} -DSRC=${PROJECT_SOURCE_DIR}/wasm -DOUT=${_pkg}/legacy-ml -DVERSION=${PROJECT_VERSION}
            -DSIMD=$<TARGET_FILE:ml_web> -DSCALAR_DIR=${ML_WASM_SCALAR_DIR}
            -DTHREADS_DIR=${ML_WASM_THREADS_DIR} -P ${PROJECT_SOURCE_DIR}/wasm/package/assemble.cmake
    COMMAND ${ML_NPM_EXE} pack --silent --pack-destination ${_pkg} ${_pkg}/legacy-ml
    DEPENDS ml_web ${_pkg_sources} ${PROJECT_SOURCE_DIR}/wasm/ml.js ${PROJECT_SOURCE_DIR}/wasm/loader.js
    BYPRODUCTS ${ML_NPM_TARBALL}
    COMMENT "npm pack: ${ML_NPM_TARBALL}" VERBATIM)
else()
  message(STATUS "legacy-ml: no npm: no npm_package target")
endif()
