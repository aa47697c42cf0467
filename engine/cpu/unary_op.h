// The frame every elementwise activation on the host shares: check the operands,
// allocate the result on the input's device, and run the kernel at the input's float
// type. The kernels are generic callables: forward(x, n, y), backward(dy, x, n, dx).
#pragma once

#include "engine/cpu/check.h"
#include "engine/tensor.h"

namespace vitune::cpu {

template <typename Kernel>
Tensor unary_forward(const Tensor& x, const char* op, const Kernel& kernel) {
  check_float(x, op);
  Tensor y(x.shape(), x.dtype(), x.device());
  dispatch_float(x, op, [&](auto zero) {
    using T = decltype(zero);
    kernel(x.kernel_data<T>(), x.numel(), y.kernel_data<T>());
  });
  return y;
}

template <typename Kernel>
Tensor unary_backward(const Tensor& dy, const Tensor& x, const char* op, const Kernel& kernel) {
  check_output_grad(dy, x, op);
  Tensor dx(x.shape(), x.dtype(), x.device());
  dispatch_float(x, op, [&](auto zero) {
    using T = decltype(zero);
    kernel(dy.kernel_data<T>(), x.kernel_data<T>(), x.numel(), dx.kernel_data<T>());
  });
  return dx;
}

}  // namespace vitune::cpu
