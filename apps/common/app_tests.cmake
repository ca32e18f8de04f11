# Test helpers for the apps in apps/, included by each app's tests/CMakeLists.txt:
#
#   include("${PROJECT_SOURCE_DIR}/apps/common/app_tests.cmake")
#
#   mpidict_app_add_run(<name> APP <app> RANKS <n>... EXPECT success|failure
#                       [EXE <target>] [TIMEOUT <s>] [DEFAULT_TIMEOUT <s>]
#                       [ARGS <arg>...] [REGEX <re>...]
#                       [CASE <case> CASE_SCRIPT <file> CASE_DIR <dir> [CASE_SUFFIX <.ext>]]
#                       [TRACE [TRACE_REGEX <re>...]] [SANITIZER_CHECK])
#     For each N in RANKS a CTest test <name>.np<N> that runs
#       mpiexec -n N <launcher flags> <EXE> <ARGS> [<CASE file>] [--trace <file>]
#     through run_checked.cmake (next to this file), which checks the exit code
#     (EXPECT), that the output matches every REGEX and, for EXPECT failure
#     (which needs --trace-exit in ARGS), that every rank exited non-zero and the
#     error was printed once.  EXE defaults to the target named APP.  TIMEOUT
#     (default DEFAULT_TIMEOUT, else 60) is the test's; the job itself gets 5 s
#     less, so a hung job is reported with its output.  Labels "mpi;app;<APP>",
#     PROCESSORS N.
#     CASE: run_checked.cmake has CASE_SCRIPT (the app's) write the input file
#     <CASE_DIR>/np<N>/<CASE><CASE_SUFFIX> (default .txt) and appends its path.
#     TRACE: appends `--trace <build dir>/<name>.np<N>.trace.json`; the run must
#     write that file and it must match every TRACE_REGEX.
#     SANITIZER_CHECK: a sanitizer report or internal error in the output fails
#     the test.
#
#   mpidict_app_split_case(<entry> <case-var> <message-var>)
#     Splits "<case>|<message>" at its first "|" (the bad-input tables).

include_guard(GLOBAL)
include(MpidictTesting)

function(mpidict_app_add_run name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "TRACE;SANITIZER_CHECK"
    "APP;EXE;EXPECT;TIMEOUT;DEFAULT_TIMEOUT;CASE;CASE_SCRIPT;CASE_DIR;CASE_SUFFIX"
    "RANKS;ARGS;REGEX;TRACE_REGEX")
  if(NOT arg_APP)
    message(FATAL_ERROR "mpidict_app_add_run(${name}): APP is required")
  endif()
  if(NOT arg_EXE)
    set(arg_EXE ${arg_APP})
  endif()
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT ${arg_DEFAULT_TIMEOUT})
  endif()
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 60)
  endif()
  math(EXPR inner_timeout "${arg_TIMEOUT} - 5")
  string(JOIN "@@" preflags ${MPIDICT_MPIEXEC_PREFLAGS})
  # "@@"-joined by replacing the list separators in the quoted value: expanding
  # the list instead would not split it after an unbalanced "[" (regex "\[").
  string(REPLACE ";" "@@" joined_regex "${arg_REGEX}")
  string(REPLACE ";" "@@" joined_trace_regex "${arg_TRACE_REGEX}")
  set(options "")
  if(arg_CASE)
    list(APPEND options -DCASE=${arg_CASE} "-DWORKDIR=${arg_CASE_DIR}" "-DCASE_SCRIPT=${arg_CASE_SCRIPT}")
    if(arg_CASE_SUFFIX)
      list(APPEND options "-DCASE_SUFFIX=${arg_CASE_SUFFIX}")
    endif()
  endif()
  if(arg_SANITIZER_CHECK)
    list(APPEND options -DSANITIZER_CHECK=ON)
  endif()
  foreach(n IN LISTS arg_RANKS)
    set(test_name ${name}.np${n})
    set(run_args ${arg_ARGS})
    set(trace_options "")
    if(arg_TRACE)
      set(trace_file "${CMAKE_CURRENT_BINARY_DIR}/${test_name}.trace.json")
      list(APPEND run_args --trace "${trace_file}")
      set(trace_options "-DTRACE_FILE=${trace_file}")
    endif()
    string(JOIN "@@" joined_args ${run_args})
    add_test(NAME ${test_name}
      COMMAND ${CMAKE_COMMAND}
        "-DMPIEXEC=${MPIEXEC_EXECUTABLE}" -DNP=${n} "-DPREFLAGS=${preflags}"
        "-DEXE=$<TARGET_FILE:${arg_EXE}>" "-DARGS=${joined_args}" "-DREGEX=${joined_regex}"
        -DEXPECT=${arg_EXPECT} -DTIMEOUT=${inner_timeout} ${options} ${trace_options}
        "-DTRACE_REGEX=${joined_trace_regex}"
        -P "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/run_checked.cmake")
    set_tests_properties(${test_name} PROPERTIES
      TIMEOUT ${arg_TIMEOUT}
      PROCESSORS ${n}
      LABELS "mpi;app;${arg_APP}"
      ENVIRONMENT "${MPIDICT_MPI_TEST_ENVIRONMENT}")
  endforeach()
endfunction()

function(mpidict_app_split_case entry case_var message_var)
  string(FIND "${entry}" "|" bar)
  string(SUBSTRING "${entry}" 0 ${bar} case)
  math(EXPR after "${bar} + 1")
  string(SUBSTRING "${entry}" ${after} -1 message)
  set(${case_var} "${case}" PARENT_SCOPE)
  set(${message_var} "${message}" PARENT_SCOPE)
endfunction()
