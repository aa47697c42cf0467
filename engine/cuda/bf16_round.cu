// Rounding f32 values to bfloat16 on CUDA: the op round_to_bf16 (f32 out, the values
// rounded) and to_bf16_storage (the 16-bit values themselves, the operands of the bf16
// GEMMs). Both use the one rounding below, bit for bit the host's f32_to_bf16. One
// thread per element.
#include <cstdint>

#include "engine/cuda/cuda_context.h"
#include "engine/cuda/gemm_bf16.h"
#include "engine/ops.h"

namespace vitune::cuda {

namespace {

// The f32 bit pattern of the bfloat16 nearest to the f32 with pattern `bits` (the low
// 16 bits zero). Round to nearest even at bit 16: adding 0x7fff plus the lowest kept
// bit carries into the kept bits exactly when the dropped half is above one half, or
// exactly one half with an odd kept part; finite values past the bf16 range become
// infinity. A NaN keeps its sign and upper payload and is made quiet.
__device__ uint32_t rounded_bf16_bits(uint32_t bits) {
  if ((bits & 0x7fffffffu) > 0x7f800000u) return (bits & 0xffff0000u) | 0x00400000u;
  return (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
}

__global__ void round_kernel(const float* x, int64_t n, float* y) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    y[i] = __uint_as_float(rounded_bf16_bits(__float_as_uint(x[i])));
  }
}

// y holds the bfloat16 bit patterns (the upper half of the rounded f32 pattern).
__global__ void to_bf16_kernel(const float* x, int64_t n, uint16_t* y) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    y[i] = uint16_t(rounded_bf16_bits(__float_as_uint(x[i])) >> 16);
  }
}

void check_f32(const Tensor& x, const char* op) {
  check_on_cuda(x, op);
  VITUNE_CHECK(x.dtype() == DType::F32, op, ": expected an f32 tensor, got ", x.str());
}

}  // namespace

Tensor round_to_bf16(const Tensor& x) {
  check_f32(x, "round_to_bf16");
  const int device = x.device().index;
  Tensor out(x.shape(), DType::F32, x.device());
  const int64_t n = x.numel();
  if (n == 0) return out;
  round_kernel<<<blocks_for(n), kThreads, 0, stream(device)>>>(x.kernel_data<float>(), n, out.kernel_data<float>());
  check_launch("round_kernel");
  return out;
}

Tensor to_bf16_storage(const Tensor& x) {
  check_f32(x, "to_bf16_storage");
  const int device = x.device().index;
  Tensor out(x.shape(), DType::BF16, x.device());
  const int64_t n = x.numel();
  if (n == 0) return out;
  to_bf16_kernel<<<blocks_for(n), kThreads, 0, stream(device)>>>(x.kernel_data<float>(), n,
                                                                  static_cast<uint16_t*>(out.kernel_raw()));
  check_launch("to_bf16_kernel");
  return out;
}

}  // namespace vitune::cuda
