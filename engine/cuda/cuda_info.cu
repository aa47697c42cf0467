// Device discovery through the CUDA runtime (the vitune::cuda part of engine/devices.h).
#include <cuda_runtime.h>

#include <cstdio>

#include "engine/devices.h"

namespace vitune::cuda {

bool built_with_cuda() { return true; }

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver / no device" error
    return 0;
  }
  return count;
}

std::string device_description(int index) {
  cudaDeviceProp properties;
  if (index < 0 || index >= device_count() ||
      cudaGetDeviceProperties(&properties, index) != cudaSuccess) {
    return "";
  }
  char text[512];
  std::snprintf(text, sizeof text, "%s, %.0f GiB, sm_%d%d", properties.name,
                double(properties.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0), properties.major,
                properties.minor);
  return text;
}

}  // namespace vitune::cuda
