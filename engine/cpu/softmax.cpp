// Softmax over the last dimension on the host (max-subtracted, sums in double) and its
// backward pass.
#include <cmath>

#include "engine/cpu/check.h"
#include "engine/cpu/isa.h"
#include "engine/op_checks.h"
#include "engine/ops.h"

namespace vitune::cpu {

namespace {

template <typename T>
void forward_kernel(const T* x, int64_t rows, int64_t features, T* y) {
  parallel_for_simd(rows, 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* xr = x + r * features;
      T* yr = y + r * features;
      T max = xr[0];
      for (int64_t c = 1; c < features; ++c) max = xr[c] > max ? xr[c] : max;
      double sum = 0;
      for (int64_t c = 0; c < features; ++c) {
        yr[c] = std::exp(xr[c] - max);
        sum += double(yr[c]);
      }
      const T inverse = T(1.0 / sum);
      for (int64_t c = 0; c < features; ++c) yr[c] *= inverse;
    }
  });
}

template <typename T>
void backward_kernel(const T* dy, const T* y, int64_t rows, int64_t features, T* dx) {
  parallel_for_simd(rows, 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* dyr = dy + r * features;
      const T* yr = y + r * features;
      double dot = 0;
      for (int64_t c = 0; c < features; ++c) dot += double(dyr[c]) * double(yr[c]);
      const T centre = T(dot);
      T* dxr = dx + r * features;
      for (int64_t c = 0; c < features; ++c) dxr[c] = yr[c] * (dyr[c] - centre);
    }
  });
}

}  // namespace

Tensor softmax_forward(const Tensor& x) {
  const char* op = "softmax_forward";
  cpu::check_float(x, op);
  const op_checks::RowShape shape = op_checks::feature_rows(x, op);
  Tensor y(x.shape(), x.dtype(), x.device());
  cpu::dispatch_float(x, op, [&](auto zero) {
    using T = decltype(zero);
    forward_kernel<T>(x.kernel_data<T>(), shape.rows, shape.features, y.kernel_data<T>());
  });
  return y;
}

// Backward. y_i = exp(x_i) / sum_k exp(x_k), so d y_i / d x_j = y_i (delta_ij - y_j) and
//   dx_j = sum_i dy_i y_i (delta_ij - y_j) = y_j (dy_j - sum_i dy_i y_i).
Tensor softmax_backward(const Tensor& dy, const Tensor& y) {
  const char* op = "softmax_backward";
  cpu::check_output_grad(dy, y, op);
  const op_checks::RowShape shape = op_checks::feature_rows(y, op);
  Tensor dx(y.shape(), y.dtype(), y.device());
  cpu::dispatch_float(y, op, [&](auto zero) {
    using T = decltype(zero);
    backward_kernel<T>(dy.kernel_data<T>(), y.kernel_data<T>(), shape.rows, shape.features, dx.kernel_data<T>());
  });
  return dx;
}

}  // namespace vitune::cpu
