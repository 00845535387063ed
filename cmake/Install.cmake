# `cmake --install build/<preset> --prefix P`: one preset's build, pinned to its ISA.
#   P/bin/ml_run, ml_bench, ml_tokenize (ml_server when the build has it)
#   P/include/legacy-ml/ml.h                    the public C API (#include <legacy-ml/ml.h>)
#   P/lib/libml_runtime.a, libml_kernels.a,     the static libraries (ISA-compiled): the layers
#         libml_simd.a                          runtime -> kernels -> simd
#   P/lib/cmake/legacy_ml/                      find_package(legacy_ml): imported target legacy_ml::ml,
#                                               LEGACY_ML_ISA = the preset's ISA
#   P/lib/pkgconfig/legacy-ml.pc                pkg-config --cflags --libs legacy-ml; variable isa=
# Both are relocatable (paths relative to their own location). A program linking the libraries runs
# the build's ISA code without a guard of its own: it needs a CPU that has LEGACY_ML_ISA's features.
#
# ml_launcher (not installed here): the bin/ programs of a multi-ISA install (tools/install.sh,
# launcher/ml_launcher.cc), compiled without ISA flags like the CPU guard it links.
# ml_install_deps: every target the install rules need (tools/install.sh builds just these).
set(ML_INSTALL_PROGRAMS ml_run ml_bench ml_tokenize)

# The API as one target: the runtime (and through it the kernels, threads) plus the header.
add_library(ml_api INTERFACE)
set_target_properties(ml_api PROPERTIES EXPORT_NAME ml)
target_link_libraries(ml_api INTERFACE ml_runtime)
# The libraries are C++ (libstdc++): a C program linking them with the C driver needs it named.
target_link_libraries(ml_api INTERFACE $<INSTALL_INTERFACE:stdc++> $<INSTALL_INTERFACE:m>)
target_include_directories(ml_api INTERFACE $<INSTALL_INTERFACE:include>)

install(TARGETS ${ML_INSTALL_PROGRAMS} RUNTIME DESTINATION bin)
if(EMSCRIPTEN)  # node programs: name.js beside its name.wasm
  foreach(_p IN LISTS ML_INSTALL_PROGRAMS)
    install(FILES "$<TARGET_FILE_DIR:${_p}>/${_p}.wasm" DESTINATION bin OPTIONAL)
  endforeach()
endif()
install(FILES runtime/ml.h DESTINATION include/legacy-ml)
install(TARGETS ml_api ml_runtime ml_kernels ml_simd EXPORT legacy_mlTargets ARCHIVE DESTINATION lib)
install(EXPORT legacy_mlTargets NAMESPACE legacy_ml:: DESTINATION lib/cmake/legacy_ml)

include(CMakePackageConfigHelpers)
set(ML_INSTALL_THREADS ${ML_THREADS})
configure_package_config_file(cmake/install/legacy_mlConfig.cmake.in
  "${CMAKE_BINARY_DIR}/install/legacy_mlConfig.cmake" INSTALL_DESTINATION lib/cmake/legacy_ml)
write_basic_package_version_file("${CMAKE_BINARY_DIR}/install/legacy_mlConfigVersion.cmake"
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES "${CMAKE_BINARY_DIR}/install/legacy_mlConfig.cmake"
  "${CMAKE_BINARY_DIR}/install/legacy_mlConfigVersion.cmake" DESTINATION lib/cmake/legacy_ml)

set(ML_PC_LIBS "-lml_runtime -lml_kernels -lml_simd -lstdc++ -lm")
if(ML_THREADS)
  string(APPEND ML_PC_LIBS " -pthread")
endif()
if(ISA_FEATURES STREQUAL "")
  set(ML_PC_NEEDS "runs on any CPU")
else()
  set(ML_PC_NEEDS "needs a CPU with ${ISA_FEATURES}")
endif()
configure_file(cmake/install/legacy-ml.pc.in "${CMAKE_BINARY_DIR}/install/legacy-ml.pc" @ONLY)
install(FILES "${CMAKE_BINARY_DIR}/install/legacy-ml.pc" DESTINATION lib/pkgconfig)

add_custom_target(ml_install_deps)
add_dependencies(ml_install_deps ${ML_INSTALL_PROGRAMS} ml_runtime ml_kernels ml_simd)
if(NOT EMSCRIPTEN AND NOT WIN32)  # POSIX exec; WebAssembly and Windows builds have no launcher
  add_executable(ml_launcher launcher/ml_launcher.cc simd/cpu_select.cc)  # no ISA flags
  target_compile_definitions(ml_launcher PRIVATE ${ML_ISA_DEFINE})
  target_link_libraries(ml_launcher PRIVATE ml_guard)
  ml_portable_program(ml_launcher)
  add_dependencies(ml_install_deps ml_launcher)
endif()

# The HTTP server is its own target (server/), added by the top-level CMakeLists.txt possibly after
# this file: install it, when the build has it, once every target exists.
function(_ml_install_server)
  if(TARGET ml_server)
    install(TARGETS ml_server RUNTIME DESTINATION bin)
    add_dependencies(ml_install_deps ml_server)
  endif()
endfunction()
cmake_language(DEFER DIRECTORY "${PROJECT_SOURCE_DIR}" CALL _ml_install_server)
