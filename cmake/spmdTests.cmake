# spmd_timeout_scaled(<out> <base seconds> <scale>): <base> times <scale> (a decimal such as 2 or
# 1.5, read to the thousandth), rounded up to a whole second. Used at configure time
# (tests/timeouts/CMakeLists.txt) and by ctest itself (the generated spmd_test_timeouts.cmake), so
# both read SPMD_TEST_TIMEOUT_SCALE the same way. A scale that is not a positive decimal is an error.
function(spmd_timeout_scaled out base scale)
  if(NOT scale MATCHES "^([0-9]+)(\\.([0-9]*))?$")
    message(FATAL_ERROR "SPMD_TEST_TIMEOUT_SCALE='${scale}' is not a positive decimal number (e.g. 2 or 1.5)")
  endif()
  set(whole ${CMAKE_MATCH_1})
  string(SUBSTRING "${CMAKE_MATCH_3}000" 0 3 milli)
  string(REGEX REPLACE "^0+([0-9])" "\\1" milli "${milli}")  # math() reads a leading 0 as decimal anyway
  math(EXPR permille "${whole} * 1000 + ${milli}")
  if(permille EQUAL 0)
    message(FATAL_ERROR "SPMD_TEST_TIMEOUT_SCALE='${scale}' must be greater than 0")
  endif()
  string(REGEX REPLACE "\\..*$" "" base "${base}")  # timeouts are whole seconds here
  math(EXPR scaled "(${base} * ${permille} + 999) / 1000")
  set(${out} ${scaled} PARENT_SCOPE)
endfunction()

# spmd_finish_tests(): called at the end of each CMakeLists.txt that registers tests. Every test of
# the calling directory gets TIMEOUT = its registered TIMEOUT (the base, required) x the cache
# variable SPMD_TEST_TIMEOUT_SCALE, and its base is recorded for ctest's own scaling
# (tests/timeouts/CMakeLists.txt). With SPMD_TEST_YIELD, every test labelled mpi gets
# LD_PRELOAD=libspmd_test_yield (tests/mpi_yield.cpp: a waiting rank yields its core). Get_test_property
# reads only the current directory's tests in CMake < 3.28, hence one call per directory.
function(spmd_finish_tests)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(test IN LISTS tests)
    get_test_property(${test} TIMEOUT base)
    if(NOT base)
      message(FATAL_ERROR "test ${test} has no TIMEOUT: give it one scaled to its work")
    endif()
    spmd_timeout_scaled(scaled ${base} ${SPMD_TEST_TIMEOUT_SCALE})
    set_tests_properties(${test} PROPERTIES TIMEOUT ${scaled})
    set_property(GLOBAL APPEND PROPERTY SPMD_TEST_TIMEOUT_BASES "${test}|${base}")
    get_test_property(${test} LABELS labels)
    if(SPMD_TEST_YIELD AND "mpi" IN_LIST labels)
      set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT "LD_PRELOAD=$<TARGET_FILE:spmd_test_yield>")
    endif()
  endforeach()
endfunction()
