# The bad MatrixMarket files of the matrix_scatter.bad.<case> tests, one per
# case: included by apps/common/run_checked.cmake, which sets `path` (the file
# to write) and `CASE` (case "missing" it handles itself: no file).

set(banner "%%MatrixMarket matrix coordinate real general\n")
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
elseif(CASE STREQUAL "declared_rows_1e12")
  # Regression (issue 18 item 3): 2 entries in a matrix declaring 10^12 rows.
  # The scatter used to loop over every declared row (1e6: 32.9 s; 1e12:
  # std::bad_alloc); only rows with entries travel now.
  file(WRITE "${path}" "${banner}1000000000000 1000000000000 2\n1 1 1.0\n999999999999 5 2.0\n")
elseif(CASE STREQUAL "truncated")
  file(WRITE "${path}" "${banner}3 3 3\n1 1 1.0\n2 2 2.0\n3 3")
elseif(CASE STREQUAL "no_size_line")
  file(WRITE "${path}" "${banner}% only comments\n")
elseif(CASE STREQUAL "bad_value")
  file(WRITE "${path}" "${banner}3 3 2\n1 1 1.0\n2 2 two\n")
elseif(CASE STREQUAL "empty")
  file(WRITE "${path}" "")
else()
  message(FATAL_ERROR "matrix_scatter cases.cmake: unknown CASE ${CASE}")
endif()
