# The bad workload files of the ycsb.bad.<case> tests: included by
# apps/common/run_checked.cmake, which sets `path` (the file to write) and `CASE`.
if(CASE STREQUAL "unknown_distribution")
  file(WRITE "${path}" "recordcount=100\noperationcount=100\nrequestdistribution=pareto\n")
elseif(CASE STREQUAL "proportions_over_one")
  file(WRITE "${path}" "recordcount=100\noperationcount=100\nreadproportion=1\nupdateproportion=0.5\n")
elseif(CASE STREQUAL "negative_count")
  file(WRITE "${path}" "recordcount=-10\noperationcount=100\n")
elseif(CASE STREQUAL "not_a_number")
  file(WRITE "${path}" "recordcount=100\noperationcount=many\n")
else()
  message(FATAL_ERROR "unknown case ${CASE}")
endif()
