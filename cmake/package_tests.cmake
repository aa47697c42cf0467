# The tests of vitune as a package (label `package`), included from tests/CMakeLists.txt:
#  - package_consumer: installs this build into a fresh prefix, builds examples/ on its
#    own against it with find_package(vitune), runs the example on the tiny ViT, and
#    builds it once more from the pkg-config flags (cmake/package_test.cmake);
#  - configure_without_optional_packages: configures the project without GoogleTest and
#    Google Benchmark and checks that the libraries, the CLI and the plain benchmark
#    programs remain while the rest is reported skipped (cmake/minimal_configure_test.cmake).
# Neither is defined inside a sanitizer or fuzz sub-build.
if(NOT VITUNE_SANITIZE STREQUAL "" OR VITUNE_FUZZ)
  return()
endif()

add_test(NAME package_consumer
         COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DBUILD_DIR=${PROJECT_BINARY_DIR}
                 -DWORK_DIR=${PROJECT_BINARY_DIR}/package-test -DGENERATOR=${CMAKE_GENERATOR}
                 -DCXX=${CMAKE_CXX_COMPILER} -DLAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER}
                 -DCONFIG=$<CONFIG> -P ${PROJECT_SOURCE_DIR}/cmake/package_test.cmake)
set_tests_properties(package_consumer PROPERTIES LABELS package TIMEOUT 600 RUN_SERIAL TRUE)

add_test(NAME configure_without_optional_packages
         COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
                 -DWORK_DIR=${PROJECT_BINARY_DIR}/minimal-configure -DGENERATOR=${CMAKE_GENERATOR}
                 -DCXX=${CMAKE_CXX_COMPILER} -DCC=${CMAKE_C_COMPILER}
                 -P ${PROJECT_SOURCE_DIR}/cmake/minimal_configure_test.cmake)
set_tests_properties(configure_without_optional_packages PROPERTIES LABELS package TIMEOUT 300)
