# Run by the `configure_without_optional_packages` test (cmake -P): configures the
# project in WORK_DIR as if GoogleTest and Google Benchmark were not installed
# (CMAKE_DISABLE_FIND_PACKAGE_*), without CUDA, and checks through CMake's file API that
# the libraries, the CLI and the plain benchmark programs are still targets while the
# GoogleTest and Google Benchmark programs are reported skipped, each by name.
# Variables: SOURCE_DIR, WORK_DIR, GENERATOR, CXX, CC.
cmake_minimum_required(VERSION 3.22)
file(REMOVE_RECURSE ${WORK_DIR})
file(WRITE ${WORK_DIR}/.cmake/api/v1/query/codemodel-v2 "")
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR} -G ${GENERATOR}
                        -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_C_COMPILER=${CC} -DVITUNE_CUDA=OFF
                        -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON
                RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "configure output:\n${out}${err}")
if(NOT result EQUAL 0)
  message(FATAL_ERROR "configuring without GoogleTest and Google Benchmark failed")
endif()

set(missing "")
foreach(program engine_tests data_tests autograd_tests nn_tests peft_tests cli_tests cuda_tests)
  if(NOT out MATCHES "skipped ${program} \\(GoogleTest not found\\)")
    list(APPEND missing "skipped ${program}")
  endif()
endforeach()
foreach(program bench_gemm bench_loader bench_train_step)
  if(NOT out MATCHES "skipped ${program} \\(Google Benchmark not found\\)")
    list(APPEND missing "skipped ${program}")
  endif()
endforeach()

# The targets the build system has, from the file API's code model.
file(GLOB index ${WORK_DIR}/.cmake/api/v1/reply/index-*.json)
file(READ "${index}" index_json)
string(JSON codemodel_file GET "${index_json}" reply codemodel-v2 jsonFile)
file(READ ${WORK_DIR}/.cmake/api/v1/reply/${codemodel_file} codemodel)
string(JSON target_count LENGTH "${codemodel}" configurations 0 targets)
set(targets "")
math(EXPR last "${target_count} - 1")
foreach(i RANGE ${last})
  string(JSON name GET "${codemodel}" configurations 0 targets ${i} name)
  list(APPEND targets ${name})
endforeach()
foreach(target vitune_engine vitune_data vitune_autograd vitune_nn vitune_peft vitune vit_step
               make_random_images fp32_peak finetune_masked)
  if(NOT target IN_LIST targets)
    list(APPEND missing "target ${target}")
  endif()
endforeach()
foreach(target engine_tests bench_gemm)
  if(target IN_LIST targets)
    list(APPEND missing "no target ${target}")
  endif()
endforeach()
if(missing)
  message(FATAL_ERROR "configured without GoogleTest and Google Benchmark, expected but not found: ${missing}")
endif()
