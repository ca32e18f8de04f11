# Test helpers for mpidict. Included from tests/CMakeLists.txt.
#
#   mpidict_add_unit_test(<name> [SOURCES] <src>... [LIBS <lib>...]
#                         [LABELS <label>...] [TIMEOUT <s>] [ARGS <arg>...] [NO_GTEST])
#     Serial test executable <name> linked with mpidict and GTest::gtest_main
#     (NO_GTEST: a plain main() that returns non-zero on failure).
#     One CTest test <name>. LABELS default "unit", TIMEOUT default 120.
#
#   mpidict_add_mpi_test(<name> [SOURCES] <src>... [RANKS <n>...] [LIBS <lib>...]
#                        [LABELS <label>...] [TIMEOUT <s>] [ARGS <arg>...]
#                        [TARGET <exe>] [ENV <VAR=value>...])
#     One executable <name> (plain main(), no GTest) linked with mpidict; for each
#     N in RANKS (default 1 2 3 4) a CTest test <name>.np<N> run as
#       ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} N ${MPIEXEC_PREFLAGS} <exe>
#       ${MPIEXEC_POSTFLAGS} <args>
#     with TIMEOUT (default 180), PROCESSORS N, LABELS "mpi" + LABELS, and the
#     environment MPIDICT_TEST_RANKS=N (the program should check MPI_Comm_size
#     against it), OMPI_MCA_rmaps_base_oversubscribe=1 and ENV.
#
# Sources may be given after the SOURCES keyword or directly after the name.

include_guard(GLOBAL)

if(NOT MPIEXEC_EXECUTABLE)
  message(FATAL_ERROR "mpidict tests: MPIEXEC_EXECUTABLE not found (find_package(MPI) first)")
endif()

# --- launcher flavour ---------------------------------------------------------
set(MPIDICT_MPI_FLAVOR "unknown")
execute_process(
  COMMAND "${MPIEXEC_EXECUTABLE}" --version
  OUTPUT_VARIABLE _mpidict_mpiexec_version
  ERROR_VARIABLE _mpidict_mpiexec_version
  RESULT_VARIABLE _mpidict_mpiexec_rc
  TIMEOUT 30
)
if(_mpidict_mpiexec_version MATCHES "Open MPI|OpenRTE|Open RTE|PRRTE"
   OR MPI_C_LIBRARY_VERSION_STRING MATCHES "Open MPI")
  set(MPIDICT_MPI_FLAVOR "openmpi")
elseif(_mpidict_mpiexec_version MATCHES "HYDRA|MPICH"
       OR MPI_C_LIBRARY_VERSION_STRING MATCHES "MPICH")
  set(MPIDICT_MPI_FLAVOR "mpich")
endif()

execute_process(COMMAND id -u OUTPUT_VARIABLE _mpidict_uid
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)

# Pre-flags as a list: user's MPIEXEC_PREFLAGS plus what the flavour needs to
# run 4 ranks on a 2-core machine (and, for Open MPI, as root).
separate_arguments(MPIDICT_MPIEXEC_PREFLAGS UNIX_COMMAND "${MPIEXEC_PREFLAGS}")
separate_arguments(MPIDICT_MPIEXEC_POSTFLAGS UNIX_COMMAND "${MPIEXEC_POSTFLAGS}")
if(MPIDICT_MPI_FLAVOR STREQUAL "openmpi")
  list(APPEND MPIDICT_MPIEXEC_PREFLAGS --oversubscribe)
  if(_mpidict_uid STREQUAL "0")
    list(APPEND MPIDICT_MPIEXEC_PREFLAGS --allow-run-as-root)
  endif()
endif()
string(JOIN " " _mpidict_launcher ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} N ${MPIDICT_MPIEXEC_PREFLAGS})
message(STATUS "mpidict tests: MPI flavour ${MPIDICT_MPI_FLAVOR}; launcher: ${_mpidict_launcher}")

set(MPIDICT_MPI_TEST_ENVIRONMENT OMPI_MCA_rmaps_base_oversubscribe=1)
if(_mpidict_uid STREQUAL "0" AND MPIDICT_MPI_FLAVOR STREQUAL "openmpi")
  list(APPEND MPIDICT_MPI_TEST_ENVIRONMENT
       OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
endif()

# --- helpers ------------------------------------------------------------------
function(mpidict_add_unit_test name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "NO_GTEST" "TIMEOUT" "SOURCES;LIBS;LABELS;ARGS")
  set(sources ${arg_SOURCES} ${arg_UNPARSED_ARGUMENTS})
  if(NOT sources)
    message(FATAL_ERROR "mpidict_add_unit_test(${name}): no SOURCES given")
  endif()
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 120)
  endif()
  if(NOT arg_LABELS)
    set(arg_LABELS unit)
  endif()

  add_executable(${name} ${sources})
  target_link_libraries(${name} PRIVATE mpidict::mpidict ${arg_LIBS})
  if(NOT arg_NO_GTEST)
    if(NOT TARGET GTest::gtest_main)
      find_package(GTest REQUIRED)
    endif()
    target_link_libraries(${name} PRIVATE GTest::gtest_main)
  endif()

  add_test(NAME ${name} COMMAND $<TARGET_FILE:${name}> ${arg_ARGS})
  set_tests_properties(${name} PROPERTIES
    TIMEOUT ${arg_TIMEOUT}
    LABELS "${arg_LABELS}"
  )
endfunction()

function(mpidict_add_mpi_test name)
  # TARGET: the executable (default: ${name}); a second call with the same
  # TARGET and other ARGS adds tests of that program under another name.
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "TIMEOUT;TARGET" "SOURCES;RANKS;LIBS;LABELS;ARGS;ENV")
  set(sources ${arg_SOURCES} ${arg_UNPARSED_ARGUMENTS})
  if(NOT arg_TARGET)
    set(arg_TARGET ${name})
  endif()
  if(NOT sources AND NOT TARGET ${arg_TARGET})
    message(FATAL_ERROR "mpidict_add_mpi_test(${name}): no SOURCES given")
  endif()
  if(NOT arg_RANKS)
    set(arg_RANKS 1 2 3 4)
  endif()
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 180)
  endif()
  set(labels mpi ${arg_LABELS})
  list(REMOVE_DUPLICATES labels)

  if(NOT TARGET ${arg_TARGET})
    add_executable(${arg_TARGET} ${sources})
    target_link_libraries(${arg_TARGET} PRIVATE mpidict::mpidict mpidict::support ${arg_LIBS})
  endif()

  foreach(n IN LISTS arg_RANKS)
    set(test_name ${name}.np${n})
    add_test(NAME ${test_name}
      COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${n}
              ${MPIDICT_MPIEXEC_PREFLAGS}
              $<TARGET_FILE:${arg_TARGET}>
              ${MPIDICT_MPIEXEC_POSTFLAGS} ${arg_ARGS}
    )
    set_tests_properties(${test_name} PROPERTIES
      TIMEOUT ${arg_TIMEOUT}
      PROCESSORS ${n}
      LABELS "${labels}"
      ENVIRONMENT "${MPIDICT_MPI_TEST_ENVIRONMENT};MPIDICT_TEST_RANKS=${n};${arg_ENV}"
    )
  endforeach()
endfunction()
