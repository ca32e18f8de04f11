# Data sets and optional tests (included by the top-level CMakeLists.txt).
#
# The data the tests use are the repository's (data/, see data/README.md) or
# come from a package manager (scripts/install_deps.sh). The word lists are
# Debian's wdutch and wamerican; point these at other copies if you have them:
#
#   MPIDICT_DUTCH_WORDS     default /usr/share/dict/dutch            (wdutch)
#   MPIDICT_AMERICAN_WORDS  default /usr/share/dict/american-english (wamerican)
#
# A test whose optional input is missing is still registered, DISABLED: CTest's
# summary lists it as "Not Run (Disabled)" and `ctest -N` counts it, so the
# number of tests does not depend on the machine (scripts/check_test_count.sh).
#
#   mpidict_tests_so_far(<var>)
#     <var> = the tests this directory has registered so far.
#   mpidict_disable_tests_since(<var> <reason>)
#     Marks DISABLED every test this directory registered since
#     mpidict_tests_so_far(<var>), and says so at configure time with <reason>.

include_guard(GLOBAL)

set(MPIDICT_DUTCH_WORDS "/usr/share/dict/dutch" CACHE FILEPATH
    "Dutch word list (Debian wdutch) of the word_build tests")
set(MPIDICT_AMERICAN_WORDS "/usr/share/dict/american-english" CACHE FILEPATH
    "American English word list (Debian wamerican) of the words and k-mer tests")

function(mpidict_tests_so_far var)
  get_property(tests DIRECTORY PROPERTY TESTS)
  set(${var} "${tests}" PARENT_SCOPE)
endfunction()

function(mpidict_disable_tests_since before reason)
  get_property(tests DIRECTORY PROPERTY TESTS)
  set(added "")
  foreach(test IN LISTS tests)
    if(NOT test IN_LIST ${before})
      list(APPEND added ${test})
    endif()
  endforeach()
  list(LENGTH added count)
  if(count GREATER 0)
    set_tests_properties(${added} PROPERTIES DISABLED TRUE)
    message(STATUS "${count} tests registered DISABLED (CTest lists them as not run): ${reason}")
  endif()
endfunction()
