# Run by the `fuzz_build` test (cmake -P): configures and builds the fuzz targets with
# clang in a sub-build. Variables: SOURCE_DIR, BINARY_DIR, CXX, CC, LAUNCHER (may be
# empty), JOBS.
set(configure ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${BINARY_DIR}
    -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_C_COMPILER=${CC} -DVITUNE_FUZZ=ON -DVITUNE_CUDA=OFF
    -DVITUNE_BUILD_TESTS=OFF -DVITUNE_BUILD_BENCH=OFF)
if(LAUNCHER)
  list(APPEND configure -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER} -DCMAKE_C_COMPILER_LAUNCHER=${LAUNCHER})
endif()
execute_process(COMMAND ${configure} RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "configuring the fuzz build in ${BINARY_DIR} failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BINARY_DIR} -j${JOBS} --target fuzz_targets
                RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "building the fuzz targets in ${BINARY_DIR} failed")
endif()
