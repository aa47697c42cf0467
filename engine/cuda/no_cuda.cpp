// The CUDA backend of a build without nvcc: there is never a device.
#include "engine/cuda/cuda_info.h"

namespace vitune::cuda {

bool built_with_cuda() { return false; }
int device_count() { return 0; }
std::string device_description(int) { return ""; }

}  // namespace vitune::cuda
