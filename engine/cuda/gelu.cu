// GELU on CUDA in its exact form, y = x * Phi(x) with Phi the standard normal CDF
// written through erfc, and its backward pass. One thread per element.
#include <cstdint>

#include "engine/cuda/cuda_context.h"
#include "engine/cuda/unary_op.cuh"
#include "engine/ops.h"

namespace vitune::cuda {

namespace {

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

// The CUDA math library's erfc and exp at the precision of T (accurate, not the fast
// intrinsics).
__device__ float erfc_of(float v) { return erfcf(v); }
__device__ double erfc_of(double v) { return erfc(v); }
__device__ float exp_of(float v) { return expf(v); }
__device__ double exp_of(double v) { return exp(v); }

// Phi(x) = erfc(-x / sqrt 2) / 2: accurate in relative terms for negative x, where
// 1 + erf(x / sqrt 2) would cancel.
template <typename T>
__device__ T normal_cdf(T x) {
  return T(0.5) * erfc_of(-x * T(kInvSqrt2));
}

template <typename T>
__global__ void forward_kernel(const T* x, int64_t n, T* y) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    y[i] = x[i] * normal_cdf(x[i]);
  }
}

// y = x Phi(x) with Phi' = phi, the standard normal density phi(x) = exp(-x^2 / 2) /
// sqrt(2 pi); by the product rule dy/dx = Phi(x) + x phi(x), so dx = dy (Phi + x phi).
template <typename T>
__global__ void backward_kernel(const T* dy, const T* x, int64_t n, T* dx) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const T v = x[i];
    const T pdf = T(kInvSqrt2Pi) * exp_of(T(-0.5) * v * v);
    dx[i] = dy[i] * (normal_cdf(v) + v * pdf);
  }
}

}  // namespace

Tensor gelu_forward(const Tensor& x) {
  return unary_forward(x, "gelu_forward", [](const auto* x, int64_t n, auto* y, cudaStream_t on) {
    forward_kernel<<<blocks_for(n), kThreads, 0, on>>>(x, n, y);
    check_launch("gelu forward_kernel");
  });
}

// Backward: dx = dy (Phi(x) + x phi(x)), derived above backward_kernel.
Tensor gelu_backward(const Tensor& dy, const Tensor& x) {
  return unary_backward(dy, x, "gelu_backward",
                        [](const auto* dy, const auto* x, int64_t n, auto* dx, cudaStream_t on) {
                          backward_kernel<<<blocks_for(n), kThreads, 0, on>>>(dy, x, n, dx);
                          check_launch("gelu backward_kernel");
                        });
}

}  // namespace vitune::cuda
