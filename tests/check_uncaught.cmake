# cmake -DCMD="mpiexec;-n;2;./uncaught_main;collective" -DNEEDLE=text -DCOUNT=1 -P check_uncaught.cmake
# Runs the command; fails unless it exits non-zero and prints NEEDLE exactly COUNT times.
execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
set(all "${out}${err}")
string(REGEX MATCHALL "${NEEDLE}" hits "${all}")
list(LENGTH hits n)
if(rc EQUAL 0)
  message(FATAL_ERROR "expected a non-zero exit, got 0; output:\n${all}")
endif()
if(NOT n EQUAL COUNT)
  message(FATAL_ERROR "expected '${NEEDLE}' ${COUNT} time(s), found ${n}; output:\n${all}")
endif()
message(STATUS "exit ${rc}, '${NEEDLE}' printed ${n} time(s): ok")
