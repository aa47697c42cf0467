# The CUDA switch. AUTO builds the CUDA backend where nvcc is found, ON requires it,
# OFF never builds it. Architectures default to a documented list unless
# CMAKE_CUDA_ARCHITECTURES is given; `native` is never chosen, so a machine without a
# GPU (CI) compiles the same code a GPU machine runs.
set(VITUNE_HAS_CUDA OFF)
if(NOT VITUNE_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # 80: A100; 86: RTX 30xx / A40; 89: L4 / L40 / RTX 40xx; 90: H100 / H200.
      set(CMAKE_CUDA_ARCHITECTURES 80 86 89 90)
    endif()
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(VITUNE_HAS_CUDA ON)
  elseif(VITUNE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "VITUNE_CUDA=ON but no CUDA compiler (nvcc) was found")
  endif()
endif()
message(STATUS "vitune CUDA backend: ${VITUNE_HAS_CUDA}")
