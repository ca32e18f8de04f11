# Runs one word_build job and checks its exit code and output (ctest's
# PASS_REGULAR_EXPRESSION ignores the exit code, hence this script).
#
#   cmake -DMPIEXEC=... -DNP=<ranks> [-DPREFLAGS=a@@b] -DEXE=<program> -DARGS=a@@b
#         -DEXPECT=success|failure [-DREGEX=re1@@re2] [-DCASE=<name> -DWORKDIR=<dir>]
#         [-DTRACE_FILE=<path>] [-DTIMEOUT=<s>] -P run_checked.cmake
#
# Lists are separated by "@@".  EXPECT=failure also requires --trace-exit in
# ARGS: every one of the NP ranks must report a non-zero exit code and the
# error must be printed exactly once.  CASE writes a small word file
# <WORKDIR>/np<NP>/<CASE>.txt first and appends its path to ARGS.  TRACE_FILE:
# the run must have written that trace document (removed first).

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

if(DEFINED CASE)
  file(MAKE_DIRECTORY "${WORKDIR}/np${NP}")
  set(path "${WORKDIR}/np${NP}/${CASE}.txt")
  file(REMOVE "${path}")
  if(CASE STREQUAL "small")
    # 300 distinct words, the last line without its newline.
    set(text "")
    foreach(index RANGE 1 299)
      string(APPEND text "woord${index}\n")
    endforeach()
    string(APPEND text "laatste")
    file(WRITE "${path}" "${text}")
  elseif(CASE STREQUAL "duplicates")
    # 200 words, 20 of them repeated (every rank must still find each one).
    set(text "")
    foreach(index RANGE 1 180)
      string(APPEND text "woord${index}\n")
    endforeach()
    foreach(index RANGE 1 20)
      string(APPEND text "woord${index}\n")
    endforeach()
    file(WRITE "${path}" "${text}")
  elseif(CASE STREQUAL "empty_line")
    file(WRITE "${path}" "aap\nnoot\n\nmies\n")
  elseif(CASE STREQUAL "empty_file")
    file(WRITE "${path}" "")
  elseif(CASE STREQUAL "key_too_long")
    string(REPEAT "x" 1100 long_word)
    file(WRITE "${path}" "aap\n${long_word}\nmies\n")
  elseif(CASE STREQUAL "missing")
    # nothing written: the file does not exist
  else()
    message(FATAL_ERROR "run_checked.cmake: unknown CASE ${CASE}")
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
if(all MATCHES "ERROR: AddressSanitizer|runtime error:|internal error at")
  list(APPEND failures "a sanitizer or internal error was reported")
endif()

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

if(DEFINED TRACE_FILE)
  if(NOT EXISTS "${TRACE_FILE}")
    list(APPEND failures "no trace file ${TRACE_FILE}")
  else()
    file(READ "${TRACE_FILE}" trace)
    foreach(part IN ITEMS "\"curve\":\\[\\[" "\"client0_latency_us\":\\[[0-9]" "\"splits\":\\[")
      if(NOT trace MATCHES "${part}")
        list(APPEND failures "the trace file does not match '${part}'")
      endif()
    endforeach()
  endif()
endif()

if(failures)
  string(JOIN "\n  " text ${failures})
  message(FATAL_ERROR "FAILED:\n  ${text}")
endif()
message(STATUS "PASSED")
