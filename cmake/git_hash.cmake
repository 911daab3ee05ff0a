# Writes OUT (a header defining POREFORGE_GIT_HASH) from the source tree's git HEAD, at build
# time: a hash taken when the build was configured goes stale with the next commit, and the
# provenance of every output file, summary and benchmark JSON names it. "-dirty" marks tracked
# files changed since HEAD. The file is rewritten only when the text changes, so an unchanged
# hash recompiles nothing.
#   cmake -DSOURCE_DIR=… -DOUT=… -P git_hash.cmake
execute_process(COMMAND git rev-parse --short=12 HEAD
  WORKING_DIRECTORY ${SOURCE_DIR} RESULT_VARIABLE failed
  OUTPUT_VARIABLE hash OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(failed OR NOT hash)
  set(hash unknown)
else()
  execute_process(COMMAND git status --porcelain --untracked-files=no
    WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE changes ERROR_QUIET)
  if(changes)
    string(APPEND hash "-dirty")
  endif()
endif()
set(text "#pragma once\n#define POREFORGE_GIT_HASH \"${hash}\"\n")
set(old "")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
