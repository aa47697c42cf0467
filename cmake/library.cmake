# vitune_library(<folder> <sources>...): the library of one folder, vitune_<folder>,
# static or shared after BUILD_SHARED_LIBS, known as vitune::<folder> inside this build
# and once installed (cmake/install.cmake). Its headers are included from the folder
# above it, as in vitune's own sources ("nn/vit.h"): the source tree while building,
# <prefix>/include/vitune once installed.
function(vitune_library folder)
  set(target vitune_${folder})
  add_library(${target} ${ARGN})
  add_library(vitune::${folder} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${folder})
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
                                              $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/vitune>)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-O3>)
endfunction()
