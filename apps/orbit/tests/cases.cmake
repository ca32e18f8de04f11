# The bad problem files of the orbit.bad.<case> tests, one per case: included
# by apps/common/run_checked.cmake, which sets `path` (the file to write) and
# `CASE` (case "missing" it handles itself: no file).

# A valid permutation problem (M11 on 4-tuples) and a valid matrix problem,
# which each case below breaks in one place.
set(perm_head "type perm\ndegree 11\naction OnTuples\nexpected 7920\n")
set(perm_gens "ngens 2\ngen 2 3 4 5 6 7 8 9 10 11 1\ngen 1 2 7 10 6 4 11 3 9 5 8\n")
set(matrix_head "# GF(3), dim 3\ntype matrix\nfield 3\ndim 3\naction OnRight\n")
set(identity "gen\n1 0 0\n0 1 0\n0 0 1\n")

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
elseif(CASE STREQUAL "all_ones_point")
  # A valid problem (not bad input): 8 coordinates x 4 bits fill a 4-byte point,
  # and the start (16,...,16) packs to all bits set, serial_flat's empty-slot
  # sentinel (kept in a flag); its orbit is the 16 constant tuples.
  file(WRITE "${path}" "type perm\ndegree 16\naction OnTuples\nexpected 16\nstart 16 16 16 16 16 16 16 16\nngens 2\n"
                       "gen 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 1\ngen 1 2 3 4 5 6 7 8 9 10 11 12 13 14 16 15\n")
else()
  message(FATAL_ERROR "orbit cases.cmake: unknown CASE ${CASE}")
endif()
