# Run by the `sanitize_<kind>` tests (cmake -P): builds the whole project with
# -DVITUNE_SANITIZE=<kind> in a sub-build and runs its test suite there. Variables:
# SOURCE_DIR, BINARY_DIR, SANITIZE, CXX, CC, LAUNCHER (may be empty), JOBS, EXCLUDE
# (a ctest label regex of tests to leave out, may be empty).
set(configure ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${BINARY_DIR} -DVITUNE_SANITIZE=${SANITIZE}
    -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_C_COMPILER=${CC} -DVITUNE_CUDA=OFF -DVITUNE_BUILD_BENCH=OFF)
if(LAUNCHER)
  list(APPEND configure -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER} -DCMAKE_C_COMPILER_LAUNCHER=${LAUNCHER})
endif()
execute_process(COMMAND ${configure} RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "configuring the ${SANITIZE} sanitizer build in ${BINARY_DIR} failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BINARY_DIR} -j${JOBS} RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "building with the ${SANITIZE} sanitizer in ${BINARY_DIR} failed")
endif()
set(run_tests ${CMAKE_CTEST_COMMAND} --test-dir ${BINARY_DIR} -j${JOBS} --output-on-failure)
if(EXCLUDE)
  list(APPEND run_tests -LE ${EXCLUDE})
endif()
execute_process(COMMAND ${run_tests} RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "the test suite fails under the ${SANITIZE} sanitizer (build in ${BINARY_DIR})")
endif()
