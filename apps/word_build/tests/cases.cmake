# The word files of the word_build tests that use CASE (generated small files
# and bad input), one per case: included by apps/common/run_checked.cmake, which
# sets `path` (the file to write) and `CASE` (case "missing" it handles itself:
# no file).

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
else()
  message(FATAL_ERROR "word_build cases.cmake: unknown CASE ${CASE}")
endif()
