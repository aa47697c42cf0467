# The reliability tests that ctest runs from the main build (included from
# tests/CMakeLists.txt):
#  - label `fuzz`: `fuzz_build` configures and builds fuzz/ with clang in the sub-build
#    fuzz-build/ (a fixture), then `fuzz_<target>` runs each libFuzzer target for
#    VITUNE_FUZZ_SECONDS. Where clang++ or libFuzzer is missing, the one test
#    `fuzz_unavailable` says so and is skipped.
#  - label `sanitize`: `sanitize_address` builds the whole project with ASan + UBSan in
#    the sub-build sanitize-address/ and runs its test suite, and `sanitize_thread` the
#    same with ThreadSanitizer in sanitize-thread/ (both with VITUNE_SANITIZE_SUITE).
# Neither is defined inside a sanitizer or fuzz build, so sub-builds do not recurse.
if(NOT VITUNE_SANITIZE STREQUAL "" OR VITUNE_FUZZ)
  return()
endif()

set(VITUNE_FUZZ_SECONDS 30 CACHE STRING "Seconds each fuzz target runs under ctest (label fuzz)")
option(VITUNE_SANITIZE_SUITE "ctest also builds and runs the suite with ASan + UBSan and with TSan (label sanitize)" OFF)
cmake_host_system_information(RESULT vitune_jobs QUERY NUMBER_OF_LOGICAL_CORES)
set(vitune_launcher "${CMAKE_CXX_COMPILER_LAUNCHER}")

# libFuzzer: clang++ must link a fuzz target with ASan and UBSan.
find_program(VITUNE_CLANGXX NAMES clang++)
find_program(VITUNE_CLANG NAMES clang)
set(fuzz_missing "")
if(NOT VITUNE_CLANGXX OR NOT VITUNE_CLANG)
  set(fuzz_missing "clang and clang++ are not installed")
else()
  set(probe ${CMAKE_CURRENT_BINARY_DIR}/libfuzzer_probe.cpp)
  file(WRITE ${probe} "#include <cstddef>\n#include <cstdint>\n"
       "extern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n")
  execute_process(COMMAND ${VITUNE_CLANGXX} -fsanitize=fuzzer,address,undefined ${probe}
                          -o ${CMAKE_CURRENT_BINARY_DIR}/libfuzzer_probe
                  RESULT_VARIABLE probe_result OUTPUT_QUIET ERROR_QUIET)
  if(NOT probe_result EQUAL 0)
    set(fuzz_missing "clang++ cannot link -fsanitize=fuzzer (install libclang-rt-dev)")
  endif()
endif()

if(fuzz_missing)
  add_test(NAME fuzz_unavailable
           COMMAND sh -c "echo 'fuzz tests skipped: ${fuzz_missing}'; exit 77")
  set_tests_properties(fuzz_unavailable PROPERTIES LABELS fuzz SKIP_RETURN_CODE 77)
else()
  set(fuzz_build ${PROJECT_BINARY_DIR}/fuzz-build)
  add_test(NAME fuzz_build
           COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DBINARY_DIR=${fuzz_build}
                   -DCXX=${VITUNE_CLANGXX} -DCC=${VITUNE_CLANG} -DLAUNCHER=${vitune_launcher}
                   -DJOBS=${vitune_jobs} -P ${PROJECT_SOURCE_DIR}/cmake/fuzz_build.cmake)
  set_tests_properties(fuzz_build PROPERTIES LABELS fuzz FIXTURES_SETUP fuzz_targets RUN_SERIAL TRUE
                                             TIMEOUT 3600)
  file(GLOB fuzz_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/fuzz/fuzz_*.cpp)
  foreach(source ${fuzz_sources})
    get_filename_component(target ${source} NAME_WE)
    string(REGEX REPLACE "^fuzz_" "" name ${target})
    add_test(NAME ${target}
             COMMAND ${PROJECT_SOURCE_DIR}/fuzz/run_target.sh ${fuzz_build}/fuzz/${target} ${name}
                     ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/fuzz-runs ${VITUNE_FUZZ_SECONDS})
    math(EXPR fuzz_timeout "${VITUNE_FUZZ_SECONDS} + 120")
    set_tests_properties(${target} PROPERTIES LABELS fuzz FIXTURES_REQUIRED fuzz_targets
                                              TIMEOUT ${fuzz_timeout})
  endforeach()
endif()

if(VITUNE_SANITIZE_SUITE)
  add_test(NAME sanitize_address
           COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
                   -DBINARY_DIR=${PROJECT_BINARY_DIR}/sanitize-address -DSANITIZE=address
                   -DCXX=${CMAKE_CXX_COMPILER} -DCC=${CMAKE_C_COMPILER} -DLAUNCHER=${vitune_launcher}
                   -DJOBS=${vitune_jobs} -DEXCLUDE=slow
                   -P ${PROJECT_SOURCE_DIR}/cmake/sanitize_suite.cmake)
  add_test(NAME sanitize_thread
           COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
                   -DBINARY_DIR=${PROJECT_BINARY_DIR}/sanitize-thread -DSANITIZE=thread
                   -DCXX=${CMAKE_CXX_COMPILER} -DCC=${CMAKE_C_COMPILER} -DLAUNCHER=${vitune_launcher}
                   -DJOBS=${vitune_jobs} -P ${PROJECT_SOURCE_DIR}/cmake/sanitize_suite.cmake)
  set_tests_properties(sanitize_address sanitize_thread PROPERTIES LABELS sanitize RUN_SERIAL TRUE TIMEOUT 3600)
endif()
