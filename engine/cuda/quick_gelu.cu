// QuickGELU on CUDA, y = x * sigmoid(1.702 x), and its backward pass. One thread per
// element; the sigmoid from exp(-|z|) so that neither branch overflows.
#include <cstdint>

#include "engine/cuda/cuda_context.h"
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
  const char* op = "quick_gelu_forward";
  check_cuda_float(x, op);
  const int device = x.device().index;
  Tensor y(x.shape(), x.dtype(), x.device());
  const int64_t n = x.numel();
  if (n == 0) return y;
  dispatch_float(x, op, [&](auto zero) {
    using T = decltype(zero);
    forward_kernel<T><<<blocks_for(n), kThreads, 0, stream(device)>>>(x.kernel_data<T>(), n, y.kernel_data<T>());
    check_launch("quick_gelu forward_kernel");
  });
  return y;
}

Tensor quick_gelu_backward(const Tensor& dy, const Tensor& x) {
  const char* op = "quick_gelu_backward";
  check_output_grad(dy, x, op);
  const int device = same_device({&dy, &x}, op);
  Tensor dx(x.shape(), x.dtype(), x.device());
  const int64_t n = x.numel();
  if (n == 0) return dx;
  dispatch_float(x, op, [&](auto zero) {
    using T = decltype(zero);
    backward_kernel<T><<<blocks_for(n), kThreads, 0, stream(device)>>>(dy.kernel_data<T>(), x.kernel_data<T>(),
                                                                       n, dx.kernel_data<T>());
    check_launch("quick_gelu backward_kernel");
  });
  return dx;
}

}  // namespace vitune::cuda
