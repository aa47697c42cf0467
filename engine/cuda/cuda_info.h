// What the CUDA backend can see: how many devices, and what each one is. In a build
// without CUDA every answer is "no device".
#pragma once

#include <string>

namespace vitune::cuda {

// Whether this build contains the CUDA backend at all.
bool built_with_cuda();
// Number of usable CUDA devices (0 when the driver or a device is missing).
int device_count();
// "NVIDIA H200, 139 GiB, sm_90" for device `index`; empty when there is none.
std::string device_description(int index);

}  // namespace vitune::cuda
