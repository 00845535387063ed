# ctest kernels.symbols (every preset but MSVC): the "// Defines:" lines at the top of every kernel source the build compiles
# (kernels/<family>/<set>/*, kernels/hwy/*, kernels/scalar/*, .S files of ML_ASM) against the C
# symbols `nm` finds defined in the kernel library. The ABI's symbols are token-pasted
# (ml_k_<kernel>_<set>: kernels/binding.h, kernels/panel_driver.h's ML_PANEL_KERNELS,
# kernels/f32x4_kernels.h), so these comment lines are what `grep ml_k_matmul_q8_avx2` finds; the
# test keeps them true: it fails on a name no compiled source claims and on a claimed name the
# library lacks. A name counts if it starts with ml_ (an extern "C" symbol, not a mangled one).
#   cmake -DNM=<nm> -DLIB=<libml_kernels.a> -DSOURCES=<a|separated list> -P check_kernel_symbols.cmake
cmake_minimum_required(VERSION 3.16)  # IN_LIST
foreach(_v NM LIB SOURCES)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "check_kernel_symbols.cmake: -D${_v}=... missing")
  endif()
endforeach()
string(REPLACE "|" ";" _sources "${SOURCES}")

set(_claimed "")
foreach(_src IN LISTS _sources)
  # CMakeLists.txt lists some sources relative to the source root (this file's parent folder)
  get_filename_component(_src "${_src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_LIST_DIR}/..")
  file(STRINGS "${_src}" _lines REGEX "^// Defines: ")
  foreach(_line IN LISTS _lines)
    string(REGEX MATCHALL "ml_[A-Za-z0-9_]+" _names "${_line}")
    list(APPEND _claimed ${_names})
  endforeach()
endforeach()
list(REMOVE_DUPLICATES _claimed)

execute_process(COMMAND "${NM}" --defined-only "${LIB}" OUTPUT_VARIABLE _nm RESULT_VARIABLE _rc ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${NM} ${LIB} failed: ${_err}")
endif()
string(REGEX MATCHALL "[0-9a-fA-F]+ T ml_[A-Za-z0-9_]+" _rows "${_nm}")
set(_defined "")
foreach(_row IN LISTS _rows)
  string(REGEX REPLACE ".* T " "" _name "${_row}")
  list(APPEND _defined ${_name})
endforeach()
list(REMOVE_DUPLICATES _defined)

set(_bad 0)
foreach(_name IN LISTS _defined)
  if(NOT _name IN_LIST _claimed)
    message("kernels.symbols: ${_name} is defined in ${LIB} but no compiled source's \"// Defines:\" line names it")
    math(EXPR _bad "${_bad} + 1")
  endif()
endforeach()
foreach(_name IN LISTS _claimed)
  if(NOT _name IN_LIST _defined)
    message("kernels.symbols: a \"// Defines:\" line names ${_name}, which ${LIB} does not define")
    math(EXPR _bad "${_bad} + 1")
  endif()
endforeach()
list(LENGTH _defined _n)
if(_bad GREATER 0 OR _n EQUAL 0)
  message(FATAL_ERROR "kernels.symbols: ${_bad} mismatch(es), ${_n} symbol(s) defined")
endif()
message("kernels.symbols: the ${_n} C symbols of ${LIB} are each named by a \"// Defines:\" line, and nothing more")
