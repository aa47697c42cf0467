# -DVITUNE_FUZZ=ON (clang only) builds the libraries with libFuzzer's coverage
# instrumentation, ASan and UBSan, and one libFuzzer program per parser from fuzz/.
# The main build stays with its own compiler; its ctest builds this configuration in
# a sub-build (see cmake/reliability_tests.cmake).
option(VITUNE_FUZZ "Build the libFuzzer targets of fuzz/ (clang; instruments everything)" OFF)

if(VITUNE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "VITUNE_FUZZ=ON needs clang++ (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  if(NOT VITUNE_SANITIZE STREQUAL "")
    message(FATAL_ERROR "VITUNE_FUZZ=ON brings its own sanitizers; leave VITUNE_SANITIZE empty")
  endif()
  vitune_add_host_compile_options(-fsanitize=fuzzer-no-link,address,undefined
                                  -fno-sanitize-recover=all -fno-omit-frame-pointer -g)
  add_link_options(-fsanitize=address,undefined)
endif()
