// The frame every elementwise activation on CUDA shares: check the operands, allocate
// the result on the input's device and, unless it is empty, launch at the input's
// float type. `launch(x, n, y, stream)` / `launch(dy, x, n, dx, stream)` starts the
// kernels on the stream of the operands' device.
#pragma once

#include <cstdint>

#include "engine/cuda/cuda_context.h"
#include "engine/tensor.h"

namespace vitune::cuda {

template <typename Launch>
Tensor unary_forward(const Tensor& x, const char* op, const Launch& launch) {
  check_cuda_float(x, op);
  Tensor y(x.shape(), x.dtype(), x.device());
  const int64_t n = x.numel();
  if (n == 0) return y;
  const cudaStream_t on = stream(x.device().index);
  dispatch_float(x, op, [&](auto zero) {
    using T = decltype(zero);
    launch(x.kernel_data<T>(), n, y.kernel_data<T>(), on);
  });
  return y;
}

template <typename Launch>
Tensor unary_backward(const Tensor& dy, const Tensor& x, const char* op, const Launch& launch) {
  check_output_grad(dy, x, op);
  const cudaStream_t on = stream(same_device({&dy, &x}, op));
  Tensor dx(x.shape(), x.dtype(), x.device());
  const int64_t n = x.numel();
  if (n == 0) return dx;
  dispatch_float(x, op, [&](auto zero) {
    using T = decltype(zero);
    launch(dy.kernel_data<T>(), x.kernel_data<T>(), n, dx.kernel_data<T>(), on);
  });
  return dx;
}

}  // namespace vitune::cuda
