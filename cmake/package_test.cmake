# Run by the `package_consumer` test (cmake -P): vitune as an outside project sees it.
# Installs BUILD_DIR into WORK_DIR/prefix, configures and builds SOURCE_DIR/examples on
# its own with find_package(vitune) (the source tree is not on its include path: only
# the prefix), runs finetune_masked on the tiny ViT and checks that it classified and
# that the masked training lowered the loss; then compiles the example once more with
# the flags of `pkg-config vitune` alone, where pkg-config is installed, and runs the
# installed `vitune --version`. Variables: SOURCE_DIR, BUILD_DIR, WORK_DIR, GENERATOR,
# CXX, LAUNCHER (may be empty), CONFIG (may be empty).
cmake_minimum_required(VERSION 3.22)
function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${what} failed (${result}):\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
set(install_command ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
if(CONFIG)
  list(APPEND install_command --config ${CONFIG})
endif()
run_step("cmake --install into ${prefix}" ${install_command})

set(configure ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples -B ${WORK_DIR}/build -G ${GENERATOR}
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${prefix})
if(LAUNCHER)
  list(APPEND configure -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
endif()
run_step("configuring examples/ against the installed vitune" ${configure})
run_step("building examples/ against the installed vitune" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)

set(model ${SOURCE_DIR}/tests/golden/tiny_vit.safetensors)
set(batch ${SOURCE_DIR}/tests/golden/tiny_images.safetensors)
run_step("finetune_masked" ${WORK_DIR}/build/finetune_masked ${model} ${batch})
message(STATUS "finetune_masked:\n${step_output}")
if(NOT step_output MATCHES "of 10 classes" OR NOT step_output MATCHES "training [0-9]+ of 27946 weights")
  message(FATAL_ERROR "finetune_masked did not report its classification and its mask")
endif()
string(REGEX MATCH "step 0  loss ([0-9.]+)" _ "${step_output}")
set(first_loss ${CMAKE_MATCH_1})
string(REGEX MATCH "step 4  loss ([0-9.]+)" _ "${step_output}")
set(last_loss ${CMAKE_MATCH_1})
if(NOT first_loss OR NOT last_loss OR NOT last_loss LESS first_loss)
  message(FATAL_ERROR "finetune_masked: the loss went from '${first_loss}' to '${last_loss}', expected it to fall")
endif()

run_step("the installed vitune" ${prefix}/bin/vitune --version)

find_program(PKG_CONFIG pkg-config)
if(PKG_CONFIG)
  file(GLOB_RECURSE pc_file ${prefix}/vitune.pc)
  get_filename_component(pc_dir "${pc_file}" DIRECTORY)
  get_filename_component(lib_dir "${pc_dir}" DIRECTORY)
  set(ENV{PKG_CONFIG_PATH} "${pc_dir}")
  run_step("pkg-config vitune" ${PKG_CONFIG} --cflags --libs vitune)
  string(STRIP "${step_output}" flags)
  separate_arguments(flags UNIX_COMMAND "${flags}")
  run_step("compiling examples/finetune_masked.cpp with the pkg-config flags"
           ${CXX} -std=c++17 -O1 ${SOURCE_DIR}/examples/finetune_masked.cpp ${flags}
           -Wl,-rpath,${lib_dir} -o ${WORK_DIR}/finetune_masked_pkgconfig)
  run_step("finetune_masked built with pkg-config" ${WORK_DIR}/finetune_masked_pkgconfig ${model} ${batch})
else()
  message(STATUS "pkg-config is not installed: the vitune.pc check is skipped")
endif()
