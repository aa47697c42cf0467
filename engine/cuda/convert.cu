// Dtype conversion of a device tensor's elements on the device (Tensor::to(DType) of a
// CUDA tensor): f32 <-> f64, one thread per element. double -> float rounds to nearest
// even, as the host's conversion does; float -> double is exact. Other pairs (the
// conversions of loading and saving) go through the host.
#include <cstdint>

#include "engine/cuda/cuda_context.h"
#include "engine/device_memory.h"

namespace vitune::cuda {

namespace {

template <typename From, typename To>
__global__ void convert_kernel(const From* in, int64_t count, To* out) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    out[i] = static_cast<To>(in[i]);
  }
}

template <typename From, typename To>
void convert(const void* source, void* destination, int64_t count, int device) {
  convert_kernel<From, To><<<blocks_for(count), kThreads, 0, stream(device)>>>(static_cast<const From*>(source),
                                                                               count, static_cast<To*>(destination));
  check_launch("convert_kernel");
}

}  // namespace

bool convert_on_device(const void* source, DType from, void* destination, DType to, int64_t count, int device) {
  if (from == DType::F32 && to == DType::F64) {
    convert<float, double>(source, destination, count, device);
    return true;
  }
  if (from == DType::F64 && to == DType::F32) {
    convert<double, float>(source, destination, count, device);
    return true;
  }
  return false;
}

}  // namespace vitune::cuda
