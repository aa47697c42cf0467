# What `cmake --install` puts under the prefix:
#   include/vitune/{engine,data,autograd,nn,peft}/   the libraries' headers (include root:
#                                                    include/vitune, so "nn/vit.h" as in
#                                                    vitune's own sources)
#   lib/libvitune_{engine,...}.a or .so              after BUILD_SHARED_LIBS
#   bin/vitune                                       the command
#   lib/cmake/vitune/vituneConfig.cmake, ...Version, vituneTargets.cmake: find_package(vitune)
#                                                    gives vitune::engine, ::data, ::autograd,
#                                                    ::nn, ::peft
#   lib/pkgconfig/vitune.pc                          for builds without CMake
# engine/cuda's headers are the backend's own (they include the CUDA toolkit's headers)
# and are not installed: the engine's interface to it is engine/devices.h and
# engine/device_memory.h.
include(CMakePackageConfigHelpers)

set(vitune_libraries vitune_engine vitune_data vitune_autograd vitune_nn vitune_peft)
install(TARGETS ${vitune_libraries} EXPORT vituneTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS vitune RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

foreach(folder engine data autograd nn peft)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${folder}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/vitune/${folder}
          FILES_MATCHING PATTERN "*.h" PATTERN "*.inc" PATTERN "cuda" EXCLUDE)
endforeach()

set(vitune_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/vitune)
install(EXPORT vituneTargets NAMESPACE vitune:: DESTINATION ${vitune_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/vituneConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/vituneConfig.cmake INSTALL_DESTINATION ${vitune_cmake_dir})
# 0.x: a new minor version may break the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/vituneConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/vituneConfig.cmake ${PROJECT_BINARY_DIR}/vituneConfigVersion.cmake
        DESTINATION ${vitune_cmake_dir})

# pkg-config: a static build's users link its dependencies themselves, so they go in
# Libs and Requires; a shared build's only in the private fields.
# The prefix is found from the .pc file's own place, so the prefix given to
# `cmake --install --prefix` holds.
file(RELATIVE_PATH VITUNE_PC_PREFIX_FROM_PCFILEDIR /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
list(GET BLAS_LIBRARIES 0 vitune_blas_library)
get_filename_component(vitune_blas_dir "${vitune_blas_library}" DIRECTORY)
set(vitune_pc_private_libs "-L${vitune_blas_dir} -lopenblas")
set(VITUNE_PC_CFLAGS "")
if(VITUNE_HAS_CUDA)
  string(APPEND vitune_pc_private_libs " -L${CUDAToolkit_LIBRARY_DIR} -lcublas -lcudart")
  set(VITUNE_PC_CFLAGS " -DVITUNE_WITH_CUDA=1")
endif()
if(BUILD_SHARED_LIBS)
  set(VITUNE_PC_REQUIRES "nlohmann_json")
  set(VITUNE_PC_REQUIRES_PRIVATE "zlib")
  set(VITUNE_PC_LIBS "")
  set(VITUNE_PC_LIBS_PRIVATE "${vitune_pc_private_libs}")
else()
  set(VITUNE_PC_REQUIRES "nlohmann_json zlib")
  set(VITUNE_PC_REQUIRES_PRIVATE "")
  set(VITUNE_PC_LIBS "${vitune_pc_private_libs}")
  set(VITUNE_PC_LIBS_PRIVATE "")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/vitune.pc.in ${PROJECT_BINARY_DIR}/vitune.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/vitune.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
