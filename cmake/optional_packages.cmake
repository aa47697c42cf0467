# GoogleTest and Google Benchmark are optional. Where one is missing (or switched off with
# -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON / _benchmark=ON), the libraries, the CLI and every
# program that does not need it are still built; each program left out is recorded with
# vitune_skip_program() and the configure step ends with the list (vitune_report_skipped_programs).
if(VITUNE_BUILD_TESTS)
  find_package(GTest QUIET)
endif()
if(VITUNE_BUILD_BENCH)
  find_package(benchmark QUIET)
endif()

set_property(GLOBAL PROPERTY VITUNE_SKIPPED_PROGRAMS "")

# Records that `program` is not built because `reason`.
function(vitune_skip_program program reason)
  set_property(GLOBAL APPEND PROPERTY VITUNE_SKIPPED_PROGRAMS "${program} (${reason})")
endfunction()

function(vitune_report_skipped_programs)
  get_property(skipped GLOBAL PROPERTY VITUNE_SKIPPED_PROGRAMS)
  if(NOT skipped)
    message(STATUS "vitune: every test and benchmark program is built")
    return()
  endif()
  list(LENGTH skipped count)
  message(STATUS "vitune: ${count} programs skipped (the libraries and the vitune CLI are built):")
  foreach(entry ${skipped})
    message(STATUS "vitune:   skipped ${entry}")
  endforeach()
endfunction()
