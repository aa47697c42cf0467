# The layers of the house (DESIGN.md), checked on every ctest run: a file of one library
# folder includes headers of its own folder and of the folders above it only
#   engine <- data <- autograd <- nn <- peft <- cli
# and outside engine/cpu/ and engine/cuda/ no file includes a backend header: the
# device-neutral engine, the libraries and the command reach a backend only through the
# engine's public headers (engine/ops.h, engine/devices.h, ...).
# Run as: cmake -DSOURCE_DIR=<repository> -P check_layering.cmake
set(layers engine data autograd nn peft cli)
set(problems "")
foreach(layer IN LISTS layers)
  list(FIND layers ${layer} rank)
  file(GLOB_RECURSE sources RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/${layer}/*.h ${SOURCE_DIR}/${layer}/*.cpp
       ${SOURCE_DIR}/${layer}/*.cu ${SOURCE_DIR}/${layer}/*.cuh)
  foreach(source IN LISTS sources)
    set(backend FALSE)
    if(source MATCHES "^engine/(cpu|cuda)/")
      set(backend TRUE)
    endif()
    file(STRINGS ${SOURCE_DIR}/${source} includes REGEX "^#include \"[a-z_]+/")
    foreach(line IN LISTS includes)
      string(REGEX MATCH "\"([a-z_]+)/([^\"]*)\"" header "${line}")
      set(folder ${CMAKE_MATCH_1})
      set(path ${CMAKE_MATCH_1}/${CMAKE_MATCH_2})
      list(FIND layers ${folder} included_rank)
      if(included_rank GREATER rank)
        string(APPEND problems "\n  ${source} includes ${path}: ${layer} may not depend on ${folder}")
      endif()
      if(NOT backend AND path MATCHES "^engine/(cpu|cuda)/")
        string(APPEND problems "\n  ${source} includes the backend header ${path}")
      endif()
    endforeach()
  endforeach()
endforeach()
if(problems)
  message(FATAL_ERROR "layering broken:${problems}")
endif()
message(STATUS "layering holds: ${layers}, backends reached through the engine's public headers only")
