// GELU on CUDA in its exact form, y = x * Phi(x) with Phi the standard normal CDF
// written through erfc, and its backward pass. One thread per element.
#include <cstdint>

#include "engine/cuda/cuda_context.h"
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
  const char* op = "gelu_forward";
  check_cuda_float(x, op);
  const int device = x.device().index;
  Tensor y(x.shape(), x.dtype(), x.device());
  const int64_t n = x.numel();
  if (n == 0) return y;
  dispatch_float(x, op, [&](auto zero) {
    using T = decltype(zero);
    forward_kernel<T><<<blocks_for(n), kThreads, 0, stream(device)>>>(x.kernel_data<T>(), n, y.kernel_data<T>());
    check_launch("gelu forward_kernel");
  });
  return y;
}

// Backward: dx = dy (Phi(x) + x phi(x)), derived above backward_kernel.
Tensor gelu_backward(const Tensor& dy, const Tensor& x) {
  const char* op = "gelu_backward";
  check_output_grad(dy, x, op);
  const int device = same_device({&dy, &x}, op);
  Tensor dx(x.shape(), x.dtype(), x.device());
  const int64_t n = x.numel();
  if (n == 0) return dx;
  dispatch_float(x, op, [&](auto zero) {
    using T = decltype(zero);
    backward_kernel<T><<<blocks_for(n), kThreads, 0, stream(device)>>>(dy.kernel_data<T>(), x.kernel_data<T>(),
                                                                       n, dx.kernel_data<T>());
    check_launch("gelu backward_kernel");
  });
  return dx;
}

}  // namespace vitune::cuda
