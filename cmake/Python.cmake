# The Python binding's native half (python/, issue 37): the C API of runtime/ml.h and
# structured/ml_structured.h as one shared library per build, and the launcher's choice as a probe.
#   libml_<isa>.so    ml_runtime (ISA-compiled) + ml_structured; exports only the C API's ml_* (the
#   (ml_<isa>.dll)    version script cmake/ml_shared.map; the kernels' ml_k_* stay local: --exclude-libs;
#                     Windows: a .def of the two layers' ml_* C symbols, cmake/ml_def.cmake)
#   libml_probe.so    simd/cpu_select.cc + simd/cpu_guard.cc + launcher/ml_probe.cc WITHOUT ISA flags:
#   (ml_probe.dll)    ml_probe_choose, the launcher's choice over the libraries a package carries
# Target ml_python builds both; `cmake --install` puts them in lib/ (tools/install.sh --python takes
# every ISA's from there into the wheel, python/setup.py; tools/package.sh packs the Windows DLLs of
# the win-* builds into the zip's wheel). Not built for WebAssembly, MSVC or the sanitizer builds.
# Windows (mingw-w64): -static as the .exe files (cmake/toolchains/mingw64.cmake), so a DLL imports
# only Windows' own DLLs (verify/package_test.py checks them against Windows 7 SP1).
# ML_SHARED_LINK_OPTIONS: extra link options of both libraries (ML_PORTABLE adds its own for old glibc:
# cmake/Portable.cmake, ml_portable_shared).
set(ML_SHARED_LINK_OPTIONS "" CACHE STRING "extra link options of libml_<isa>.so and libml_probe.so")
if(EMSCRIPTEN OR MSVC OR ML_SANITIZE OR ML_FUZZ)
  return()
endif()
set(ML_PYTHON_LIB_TARGETS ml_python_isa ml_python_probe)
if(WIN32)
  set(_ml_shared_link -static -static-libgcc -static-libstdc++ ${ML_SHARED_LINK_OPTIONS})
else()
  set(_ml_shared_link -Wl,--no-undefined -Wl,--version-script=${PROJECT_SOURCE_DIR}/cmake/ml_shared.map
      -Wl,--exclude-libs,libml_kernels.a:libml_simd.a ${ML_SHARED_LINK_OPTIONS})
  # The static layers become position-independent to link into a shared library. No semantic
  # interposition: calls between them stay direct (the version script makes them local anyway), so
  # the programs' code is what it was under the default PIE.
  foreach(_t ml_simd ml_kernels ml_runtime ml_structured)
    set_target_properties(${_t} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    target_compile_options(${_t} PRIVATE -fno-semantic-interposition)
  endforeach()
endif()

file(WRITE "${CMAKE_BINARY_DIR}/ml_shared.c" "/* libml_<isa>.so: every object comes from the static layers (cmake/Python.cmake) */\n")
add_library(ml_python_isa SHARED "${CMAKE_BINARY_DIR}/ml_shared.c")
set_target_properties(ml_python_isa PROPERTIES OUTPUT_NAME ml_${ML_ISA} LINKER_LANGUAGE CXX
                      LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/ml_shared.map)
# Every object of the two API layers (nothing references them inside the library), then the layers
# again as usual for what they need (kernels, simd, threads).
target_link_options(ml_python_isa PRIVATE -Wl,--whole-archive $<TARGET_FILE:ml_structured> $<TARGET_FILE:ml_runtime>
                    -Wl,--no-whole-archive ${_ml_shared_link})
target_link_libraries(ml_python_isa PRIVATE ml_structured ml_runtime)
if(WIN32)  # PE has no version script: the exports are a .def of what the Linux map makes global
  set(_ml_def "${CMAKE_BINARY_DIR}/ml_${ML_ISA}.def")
  add_custom_command(OUTPUT "${_ml_def}" DEPENDS ml_structured ml_runtime ${PROJECT_SOURCE_DIR}/cmake/ml_def.cmake
    COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM} -DOUT=${_ml_def} -DNAME=ml_${ML_ISA}.dll
            "-DLIBS=$<TARGET_FILE:ml_structured>|$<TARGET_FILE:ml_runtime>" -P ${PROJECT_SOURCE_DIR}/cmake/ml_def.cmake
    VERBATIM)
  target_sources(ml_python_isa PRIVATE "${_ml_def}")
endif()

add_library(ml_python_probe SHARED launcher/ml_probe.cc simd/cpu_select.cc simd/cpu_guard.cc)  # no ISA flags
set_target_properties(ml_python_probe PROPERTIES OUTPUT_NAME ml_probe LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/ml_shared.map)
target_compile_definitions(ml_python_probe PRIVATE ${ML_ISA_DEFINE})
target_include_directories(ml_python_probe PRIVATE "${ML_ROOT_simd}")
target_link_options(ml_python_probe PRIVATE ${_ml_shared_link})

foreach(_t ${ML_PYTHON_LIB_TARGETS})
  ml_portable_shared(${_t})  # ML_PORTABLE: loadable on glibc 2.17 (cmake/Portable.cmake)
  if(WIN32)  # ml_<isa>.dll, ml_probe.dll: the names python/legacy_ml/_native.py loads there
    set_target_properties(${_t} PROPERTIES PREFIX "")
  endif()
endforeach()
add_custom_target(ml_python DEPENDS ${ML_PYTHON_LIB_TARGETS})
install(TARGETS ${ML_PYTHON_LIB_TARGETS} LIBRARY DESTINATION lib RUNTIME DESTINATION lib
        ARCHIVE DESTINATION lib EXCLUDE_FROM_ALL)  # (Windows' import libraries: not installed)
add_dependencies(ml_install_deps ml_python)
