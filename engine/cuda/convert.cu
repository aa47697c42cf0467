// Dtype conversion of a device tensor's elements on the device (Tensor::to(DType) of a
// CUDA tensor): f32 <-> f64 and f32 <-> bf16, one thread per element. double -> float
// and float -> bf16 round to nearest even, as the host's conversions do; the widening
// ones are exact. Other pairs (the conversions of loading and saving) go through the
// host.
#include <cstdint>

#include "engine/cuda/bf16_bits.cuh"
#include "engine/cuda/cuda_context.h"
#include "engine/device_memory.h"

namespace vitune::cuda {

namespace {

// The conversion of one element: a static_cast, or one of the two bf16 ones below.
template <typename From, typename To>
struct Cast {
  __device__ To operator()(From x) const { return static_cast<To>(x); }
};
// bf16 values are handled as their 16-bit patterns.
struct ToBf16 {
  __device__ uint16_t operator()(float x) const { return uint16_t(rounded_bf16_bits(__float_as_uint(x)) >> 16); }
};
struct FromBf16 {
  __device__ float operator()(uint16_t h) const { return __uint_as_float(uint32_t(h) << 16); }
};

template <typename From, typename To, typename Convert>
__global__ void convert_kernel(const From* in, int64_t count, To* out, Convert convert) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    out[i] = convert(in[i]);
  }
}

template <typename From, typename To, typename Convert = Cast<From, To>>
void convert(const void* source, void* destination, int64_t count, int device) {
  convert_kernel<<<blocks_for(count), kThreads, 0, stream(device)>>>(static_cast<const From*>(source), count,
                                                                     static_cast<To*>(destination), Convert{});
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
  if (from == DType::F32 && to == DType::BF16) {
    convert<float, uint16_t, ToBf16>(source, destination, count, device);
    return true;
  }
  if (from == DType::BF16 && to == DType::F32) {
    convert<uint16_t, float, FromBf16>(source, destination, count, device);
    return true;
  }
  return false;
}

}  // namespace vitune::cuda
