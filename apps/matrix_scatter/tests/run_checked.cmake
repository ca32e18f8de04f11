# Runs one matrix_scatter job and checks its exit code and output.
# (ctest's PASS_REGULAR_EXPRESSION ignores the exit code, hence this script.)
#
#   cmake -DMPIEXEC=... -DNP=<ranks> [-DPREFLAGS=a@@b] -DEXE=<program> -DARGS=a@@b
#         -DEXPECT=success|failure [-DREGEX=re1@@re2] [-DCASE=<name> -DWORKDIR=<dir>]
#         -P run_checked.cmake
#
# Lists are separated by "@@".  EXPECT=failure also requires --trace-exit in
# ARGS: it checks that every one of the NP ranks reported a non-zero exit code
# and that the error was printed exactly once (by rank 0).  CASE writes a small
# bad input file <WORKDIR>/np<NP>/<CASE>.mtx first and appends its path to ARGS.

foreach(variable IN ITEMS MPIEXEC NP EXE EXPECT)
  if(NOT DEFINED ${variable})
    message(FATAL_ERROR "run_checked.cmake: -D${variable}=... is required")
  endif()
endforeach()

string(REPLACE "@@" ";" preflags "${PREFLAGS}")
string(REPLACE "@@" ";" arguments "${ARGS}")
string(REPLACE "@@" ";" regexes "${REGEX}")

set(banner "%%MatrixMarket matrix coordinate real general\n")
if(DEFINED CASE)
  # One directory per rank count: the np1, np2 and np4 tests of a case may run at once.
  file(MAKE_DIRECTORY "${WORKDIR}/np${NP}")
  set(path "${WORKDIR}/np${NP}/${CASE}.mtx")
  file(REMOVE "${path}")
  if(CASE STREQUAL "malformed_banner")
    file(WRITE "${path}" "%%MatrixMarket matrix coordinate real\n3 3 1\n1 1 1.0\n")
  elseif(CASE STREQUAL "no_banner")
    file(WRITE "${path}" "3 3 1\n1 1 1.0\n")
  elseif(CASE STREQUAL "unknown_symmetry")
    file(WRITE "${path}" "%%MatrixMarket matrix coordinate real generel\n3 3 1\n1 1 1.0\n")
  elseif(CASE STREQUAL "array_format")
    file(WRITE "${path}" "%%MatrixMarket matrix array real general\n2 2\n1.0\n2.0\n3.0\n4.0\n")
  elseif(CASE STREQUAL "complex_field")
    file(WRITE "${path}" "%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 1 1.0 2.0\n")
  elseif(CASE STREQUAL "row_out_of_range")
    file(WRITE "${path}" "${banner}% a comment\n3 3 2\n1 1 1.0\n4 1 2.0\n")
  elseif(CASE STREQUAL "column_zero")
    file(WRITE "${path}" "${banner}3 3 2\n1 1 1.0\n2 0 2.0\n")
  elseif(CASE STREQUAL "more_entries_than_declared")
    file(WRITE "${path}" "${banner}3 3 2\n1 1 1.0\n2 2 2.0\n3 3 3.0\n")
  elseif(CASE STREQUAL "fewer_entries_than_declared")
    file(WRITE "${path}" "${banner}3 3 5\n1 1 1.0\n2 2 2.0\n")
  elseif(CASE STREQUAL "huge_count")
    # A size line that promises far more than the file holds fails fast, without
    # allocating for a billion rows first.
    file(WRITE "${path}" "${banner}1000000000 1000000000 1000000000\n1 1 1.0\n")
  elseif(CASE STREQUAL "truncated")
    file(WRITE "${path}" "${banner}3 3 3\n1 1 1.0\n2 2 2.0\n3 3")
  elseif(CASE STREQUAL "no_size_line")
    file(WRITE "${path}" "${banner}% only comments\n")
  elseif(CASE STREQUAL "bad_value")
    file(WRITE "${path}" "${banner}3 3 2\n1 1 1.0\n2 2 two\n")
  elseif(CASE STREQUAL "empty")
    file(WRITE "${path}" "")
  elseif(CASE STREQUAL "missing")
    # nothing written: the file does not exist
  else()
    message(FATAL_ERROR "run_checked.cmake: unknown CASE ${CASE}")
  endif()
  list(APPEND arguments "${path}")
endif()

set(command ${MPIEXEC} -n ${NP} ${preflags} ${EXE} ${arguments})
string(JOIN " " shown_command ${command})
message(STATUS "running: ${shown_command}")
execute_process(
  COMMAND ${command}
  RESULT_VARIABLE exit_code
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err
  TIMEOUT 55
)
set(all "${out}${err}")
message(STATUS "exit: ${exit_code}\n--- stdout ---\n${out}--- stderr ---\n${err}--------------")

set(failures "")
if(NOT exit_code MATCHES "^[0-9]+$")
  list(APPEND failures "the job did not end normally: ${exit_code}")
elseif(EXPECT STREQUAL "success" AND NOT exit_code EQUAL 0)
  list(APPEND failures "exit code ${exit_code}, expected 0")
elseif(EXPECT STREQUAL "failure" AND exit_code EQUAL 0)
  list(APPEND failures "exit code 0, expected non-zero")
endif()

foreach(regex IN LISTS regexes)
  if(NOT all MATCHES "${regex}")
    list(APPEND failures "output does not match '${regex}'")
  endif()
endforeach()

if(EXPECT STREQUAL "failure")
  # Every rank must have exited with a non-zero code (--trace-exit lines).
  string(REGEX MATCHALL "rank [0-9]+ exits with code [1-9][0-9]*" nonzero "${all}")
  list(LENGTH nonzero nonzero_count)
  if(NOT nonzero_count EQUAL NP)
    list(APPEND failures "${nonzero_count} of ${NP} ranks reported a non-zero exit code")
  endif()
  string(REGEX MATCHALL "error: " reported "${all}")
  list(LENGTH reported reported_count)
  if(NOT reported_count EQUAL 1)
    list(APPEND failures "the error was printed ${reported_count} times, expected once (rank 0)")
  endif()
endif()

if(failures)
  string(JOIN "\n  " text ${failures})
  message(FATAL_ERROR "FAILED:\n  ${text}")
endif()
message(STATUS "PASSED")
