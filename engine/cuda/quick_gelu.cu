// QuickGELU on CUDA, y = x * sigmoid(1.702 x), and its backward pass. One thread per
// element; the sigmoid from exp(-|z|) so that neither branch overflows.
#include <cstdint>

#include "engine/cuda/cuda_context.h"
#include "engine/cuda/unary_op.cuh"
#include "engine/ops.h"

namespace vitune::cuda {

namespace {

constexpr double kAlpha = 1.702;

__device__ float exp_of(float v) { return expf(v); }
__device__ double exp_of(double v) { return exp(v); }

template <typename T>
__device__ T sigmoid(T z) {
  const T e = exp_of(-fabs(z));
  return z >= 0 ? T(1) / (T(1) + e) : e / (T(1) + e);
}

template <typename T>
__global__ void forward_kernel(const T* x, int64_t n, T* y) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    y[i] = x[i] * sigmoid(T(kAlpha) * x[i]);
  }
}

// y = x s(a x): dy/dx = s + a x s (1 - s).
template <typename T>
__global__ void backward_kernel(const T* dy, const T* x, int64_t n, T* dx) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const T s = sigmoid(T(kAlpha) * x[i]);
    dx[i] = dy[i] * (s + T(kAlpha) * x[i] * s * (T(1) - s));
  }
}

}  // namespace

Tensor quick_gelu_forward(const Tensor& x) {
  return unary_forward(x, "quick_gelu_forward", [](const auto* x, int64_t n, auto* y, cudaStream_t on) {
    forward_kernel<<<blocks_for(n), kThreads, 0, on>>>(x, n, y);
    check_launch("quick_gelu forward_kernel");
  });
}

Tensor quick_gelu_backward(const Tensor& dy, const Tensor& x) {
  return unary_backward(dy, x, "quick_gelu_backward",
                        [](const auto* dy, const auto* x, int64_t n, auto* dx, cudaStream_t on) {
                          backward_kernel<<<blocks_for(n), kThreads, 0, on>>>(dy, x, n, dx);
                          check_launch("quick_gelu backward_kernel");
                        });
}

}  // namespace vitune::cuda
