// Rounding f32 values to bfloat16 on CUDA: the op round_to_bf16, f32 out, the values
// rounded (the 16-bit values themselves, the operands of the bf16 GEMMs, are
// Tensor::to(DType::BF16), engine/cuda/convert.cu). Both use the one rounding of
// bf16_bits.cuh, bit for bit the host's f32_to_bf16. One thread per element.
#include <cstdint>

#include "engine/cuda/bf16_bits.cuh"
#include "engine/cuda/cuda_context.h"
#include "engine/ops.h"

namespace vitune::cuda {

namespace {

__global__ void round_kernel(const float* x, int64_t n, float* y) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    y[i] = __uint_as_float(rounded_bf16_bits(__float_as_uint(x[i])));
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

}  // namespace vitune::cuda
