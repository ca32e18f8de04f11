# Runs one orbit job and checks its exit code and output (ctest's
# PASS_REGULAR_EXPRESSION ignores the exit code, hence this script).
#
#   cmake -DMPIEXEC=... -DNP=<ranks> [-DPREFLAGS=a@@b] -DEXE=<program> -DARGS=a@@b
#         -DEXPECT=success|failure [-DREGEX=re1@@re2] [-DCASE=<name> -DWORKDIR=<dir>]
#         [-DTIMEOUT=<s>] -P run_checked.cmake
#
# Lists are separated by "@@".  EXPECT=failure also requires --trace-exit in
# ARGS: every one of the NP ranks must report a non-zero exit code and the
# error must be printed exactly once.  CASE writes a small bad problem file
# <WORKDIR>/np<NP>/<CASE>.txt first and appends its path to ARGS.

foreach(variable IN ITEMS MPIEXEC NP EXE EXPECT)
  if(NOT DEFINED ${variable})
    message(FATAL_ERROR "run_checked.cmake: -D${variable}=... is required")
  endif()
endforeach()
if(NOT DEFINED TIMEOUT)
  set(TIMEOUT 110)
endif()

string(REPLACE "@@" ";" preflags "${PREFLAGS}")
string(REPLACE "@@" ";" arguments "${ARGS}")
string(REPLACE "@@" ";" regexes "${REGEX}")

# A valid permutation problem (M11 on 4-tuples) and a valid matrix problem,
# which each case below breaks in one place.
set(perm_head "type perm\ndegree 11\naction OnTuples\nexpected 7920\n")
set(perm_gens "ngens 2\ngen 2 3 4 5 6 7 8 9 10 11 1\ngen 1 2 7 10 6 4 11 3 9 5 8\n")
set(matrix_head "# GF(3), dim 3\ntype matrix\nfield 3\ndim 3\naction OnRight\n")
set(identity "gen\n1 0 0\n0 1 0\n0 0 1\n")

if(DEFINED CASE)
  file(MAKE_DIRECTORY "${WORKDIR}/np${NP}")
  set(path "${WORKDIR}/np${NP}/${CASE}.txt")
  file(REMOVE "${path}")
  if(CASE STREQUAL "malformed_line")
    file(WRITE "${path}" "type perm\ndegree eleven\naction OnTuples\n")
  elseif(CASE STREQUAL "unknown_key")
    file(WRITE "${path}" "${perm_head}colour blue\nstart 1 2 3 4\n${perm_gens}")
  elseif(CASE STREQUAL "repeated_key")
    file(WRITE "${path}" "${perm_head}start 1 2 3 4\nstart 1 2 3 5\n${perm_gens}")
  elseif(CASE STREQUAL "not_a_permutation")
    file(WRITE "${path}" "${perm_head}start 1 2 3 4\nngens 2\ngen 2 3 4 5 6 7 8 9 10 11 1\ngen 1 2 7 10 6 4 11 3 9 5 7\n")
  elseif(CASE STREQUAL "image_out_of_range")
    file(WRITE "${path}" "${perm_head}start 1 2 3 4\nngens 1\ngen 2 3 4 5 6 7 8 9 10 11 12\n")
  elseif(CASE STREQUAL "permutation_too_short")
    file(WRITE "${path}" "${perm_head}start 1 2 3 4\nngens 1\ngen 2 3 4 5 6 7 8 9 10 1\n")
  elseif(CASE STREQUAL "start_out_of_range")
    file(WRITE "${path}" "${perm_head}start 1 2 3 12\n${perm_gens}")
  elseif(CASE STREQUAL "start_set_repeats")
    file(WRITE "${path}" "type perm\ndegree 11\naction OnSets\nstart 1 2 2 4\n${perm_gens}")
  elseif(CASE STREQUAL "ngens_mismatch")
    file(WRITE "${path}" "${perm_head}start 1 2 3 4\nngens 3\ngen 2 3 4 5 6 7 8 9 10 11 1\ngen 1 2 7 10 6 4 11 3 9 5 8\n")
  elseif(CASE STREQUAL "wrong_action")
    file(WRITE "${path}" "type perm\ndegree 11\naction OnRight\nstart 1 2 3 4\n${perm_gens}")
  elseif(CASE STREQUAL "matrix_row_too_short")
    file(WRITE "${path}" "${matrix_head}start 1 0 0\nngens 1\ngen\n1 0 0\n0 1\n0 0 1\n")
  elseif(CASE STREQUAL "matrix_too_few_rows")
    file(WRITE "${path}" "${matrix_head}start 1 0 0\nngens 2\ngen\n1 0 0\n0 1 0\n${identity}")
  elseif(CASE STREQUAL "matrix_entry_out_of_range")
    file(WRITE "${path}" "${matrix_head}start 1 0 0\nngens 1\ngen\n1 0 0\n0 3 0\n0 0 1\n")
  elseif(CASE STREQUAL "matrix_singular")
    file(WRITE "${path}" "${matrix_head}start 1 0 0\nngens 1\ngen\n1 0 0\n0 1 0\n1 1 0\n")
  elseif(CASE STREQUAL "matrix_truncated")
    file(WRITE "${path}" "${matrix_head}start 1 0 0\nngens 1\ngen\n1 0 0\n0 1 0\n")
  elseif(CASE STREQUAL "start_vector_length")
    file(WRITE "${path}" "${matrix_head}start 1 0\nngens 1\n${identity}")
  elseif(CASE STREQUAL "start_entry_out_of_range")
    file(WRITE "${path}" "${matrix_head}start 1 0 5\nngens 1\n${identity}")
  elseif(CASE STREQUAL "point_too_large")
    # 200 coordinates of 2 bits = 400 bits > 32 bytes.
    string(REPEAT " 0" 199 zeros)
    file(WRITE "${path}" "type matrix\nfield 3\ndim 200\naction OnRight\nstart 1${zeros}\nngens 1\n")
  elseif(CASE STREQUAL "field_not_prime")
    file(WRITE "${path}" "type matrix\nfield 4\ndim 3\n")
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
  TIMEOUT ${TIMEOUT}
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
