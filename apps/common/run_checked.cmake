# Runs one job of an app's program and checks its exit code and output (ctest's
# PASS_REGULAR_EXPRESSION ignores the exit code, hence this script).  Every
# app's tests use it, through mpidict_app_add_run() (app_tests.cmake).
#
#   cmake -DMPIEXEC=... -DNP=<ranks> [-DPREFLAGS=a@@b] -DEXE=<program> -DARGS=a@@b
#         -DEXPECT=success|failure [-DREGEX=re1@@re2] [-DTIMEOUT=<s>]
#         [-DCASE=<name> -DWORKDIR=<dir> -DCASE_SCRIPT=<file> [-DCASE_SUFFIX=.txt]]
#         [-DTRACE_FILE=<path> [-DTRACE_REGEX=re1@@re2]] [-DSANITIZER_CHECK=ON]
#         -P run_checked.cmake
#
# Lists are separated by "@@".  The output (stdout and stderr) must match every
# REGEX.  TIMEOUT (default 110 s) bounds the job.
#
# EXPECT=failure also requires --trace-exit in ARGS: every one of the NP ranks
# must report a non-zero exit code and the error must be printed exactly once
# (by rank 0).
#
# CASE writes an input file <WORKDIR>/np<NP>/<CASE><CASE_SUFFIX> first (one
# directory per rank count: the np1, np2 and np4 tests of a case may run at
# once) and appends its path to ARGS.  The app's CASE_SCRIPT writes the file
# `${path}` for `${CASE}` (and stops with an error for a case it does not
# know); CASE "missing" writes nothing, so the file does not exist.
#
# TRACE_FILE: the run must have written that file (removed first), and it must
# match every TRACE_REGEX.  SANITIZER_CHECK: a sanitizer report or an internal
# error in the output fails the run even if everything else passed.

foreach(variable IN ITEMS MPIEXEC NP EXE EXPECT)
  if(NOT DEFINED ${variable})
    message(FATAL_ERROR "run_checked.cmake: -D${variable}=... is required")
  endif()
endforeach()
if(NOT DEFINED TIMEOUT)
  set(TIMEOUT 110)
endif()
if(NOT DEFINED CASE_SUFFIX)
  set(CASE_SUFFIX ".txt")
endif()

string(REPLACE "@@" ";" preflags "${PREFLAGS}")
string(REPLACE "@@" ";" arguments "${ARGS}")

# What went wrong, one "\n  "-led line each.
set(failures "")
function(add_failure text)
  set(failures "${failures}\n  ${text}" PARENT_SCOPE)
endfunction()

# Adds a failure for each "@@"-separated regex in `regexes` that `text` does not
# match.  Split by hand rather than as a CMake list: a list does not split at a
# ";" that follows an unbalanced "[" (as in the regex "\[\[").
function(require_matches text regexes what)
  set(failures_here "")
  while(NOT regexes STREQUAL "")
    string(FIND "${regexes}" "@@" at)
    if(at EQUAL -1)
      set(regex "${regexes}")
      set(regexes "")
    else()
      string(SUBSTRING "${regexes}" 0 ${at} regex)
      math(EXPR rest "${at} + 2")
      string(SUBSTRING "${regexes}" ${rest} -1 regexes)
    endif()
    if(NOT text MATCHES "${regex}")
      string(APPEND failures_here "\n  ${what} does not match '${regex}'")
    endif()
  endwhile()
  set(failures "${failures}${failures_here}" PARENT_SCOPE)
endfunction()

if(DEFINED CASE)
  file(MAKE_DIRECTORY "${WORKDIR}/np${NP}")
  set(path "${WORKDIR}/np${NP}/${CASE}${CASE_SUFFIX}")
  file(REMOVE "${path}")
  if(NOT CASE STREQUAL "missing")
    if(NOT DEFINED CASE_SCRIPT)
      message(FATAL_ERROR "run_checked.cmake: CASE ${CASE} needs -DCASE_SCRIPT=...")
    endif()
    include("${CASE_SCRIPT}")
  endif()
  list(APPEND arguments "${path}")
endif()
if(DEFINED TRACE_FILE)
  file(REMOVE "${TRACE_FILE}")
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

if(NOT exit_code MATCHES "^[0-9]+$")
  add_failure("the job did not end normally: ${exit_code}")
elseif(EXPECT STREQUAL "success" AND NOT exit_code EQUAL 0)
  add_failure("exit code ${exit_code}, expected 0")
elseif(EXPECT STREQUAL "failure" AND exit_code EQUAL 0)
  add_failure("exit code 0, expected non-zero")
endif()

require_matches("${all}" "${REGEX}" "output")
if(SANITIZER_CHECK AND all MATCHES "ERROR: AddressSanitizer|runtime error:|internal error at")
  add_failure("a sanitizer or internal error was reported")
endif()

if(EXPECT STREQUAL "failure")
  # Every rank must have exited with a non-zero code (--trace-exit lines).
  string(REGEX MATCHALL "rank [0-9]+ exits with code [1-9][0-9]*" nonzero "${all}")
  list(LENGTH nonzero nonzero_count)
  if(NOT nonzero_count EQUAL NP)
    add_failure("${nonzero_count} of ${NP} ranks reported a non-zero exit code")
  endif()
  string(REGEX MATCHALL "error: " reported "${all}")
  list(LENGTH reported reported_count)
  if(NOT reported_count EQUAL 1)
    add_failure("the error was printed ${reported_count} times, expected once (rank 0)")
  endif()
endif()

if(DEFINED TRACE_FILE)
  if(NOT EXISTS "${TRACE_FILE}")
    add_failure("no trace file ${TRACE_FILE}")
  else()
    file(READ "${TRACE_FILE}" trace)
    require_matches("${trace}" "${TRACE_REGEX}" "the trace file")
  endif()
endif()

if(NOT failures STREQUAL "")
  message(FATAL_ERROR "FAILED:${failures}")
endif()
message(STATUS "PASSED")
