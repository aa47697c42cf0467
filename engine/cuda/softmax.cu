// Softmax over the last dimension on CUDA (max-subtracted, sums in double) and its
// backward pass. One thread block per row; each thread owns the columns threadIdx.x,
// threadIdx.x + blockDim.x, ... of its row in every pass, so rows of any length work
// and a thread only ever re-reads what it wrote itself.
#include <cstdint>

#include "engine/cuda/block_reduce.cuh"
#include "engine/cuda/cuda_context.h"
#include "engine/op_checks.h"
#include "engine/ops.h"

namespace vitune::cuda {

namespace {

__device__ float exp_of(float v) { return expf(v); }
__device__ double exp_of(double v) { return exp(v); }

template <typename T>
__global__ void forward_kernel(const T* x, int64_t rows, int64_t features, T* y) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * features;
    T* yr = y + r * features;
    T local_max = xr[0];
    for (int64_t c = threadIdx.x; c < features; c += blockDim.x) {
      local_max = MaxOp{}(local_max, xr[c]);
    }
    const T max = block_max(local_max);
    double local_sum = 0;
    for (int64_t c = threadIdx.x; c < features; c += blockDim.x) {
      yr[c] = exp_of(xr[c] - max);
      local_sum += double(yr[c]);
    }
    const T inverse = T(1.0 / block_sum(local_sum));
    for (int64_t c = threadIdx.x; c < features; c += blockDim.x) yr[c] *= inverse;
  }
}

// y_i = exp(x_i) / sum_k exp(x_k), so d y_i / d x_j = y_i (delta_ij - y_j) and
//   dx_j = sum_i dy_i y_i (delta_ij - y_j) = y_j (dy_j - sum_i dy_i y_i).
// The dot product sum_i dy_i y_i is one block sum per row.
template <typename T>
__global__ void backward_kernel(const T* dy, const T* y, int64_t rows, int64_t features, T* dx) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* dyr = dy + r * features;
    const T* yr = y + r * features;
    T* dxr = dx + r * features;
    double local_dot = 0;
    for (int64_t c = threadIdx.x; c < features; c += blockDim.x) {
      local_dot += double(dyr[c]) * double(yr[c]);
    }
    const T centre = T(block_sum(local_dot));
    for (int64_t c = threadIdx.x; c < features; c += blockDim.x) dxr[c] = yr[c] * (dyr[c] - centre);
  }
}

}  // namespace

Tensor softmax_forward(const Tensor& x) {
  const char* op = "softmax_forward";
  check_cuda_float(x, op);
  const op_checks::RowShape shape = op_checks::feature_rows(x, op);
  const int device = x.device().index;
  Tensor y(x.shape(), x.dtype(), x.device());
  const int64_t rows = shape.rows, features = shape.features;
  if (rows == 0) return y;
  dispatch_float(x, op, [&](auto zero) {
    using T = decltype(zero);
    forward_kernel<T><<<blocks_for(rows, 1), kRowThreads, 0, stream(device)>>>(
        x.kernel_data<T>(), rows, features, y.kernel_data<T>());
    check_launch("softmax forward_kernel");
  });
  return y;
}

// Backward: dx = y (dy - sum(dy y)) per row, derived above backward_kernel.
Tensor softmax_backward(const Tensor& dy, const Tensor& y) {
  const char* op = "softmax_backward";
  check_output_grad(dy, y, op);
  const op_checks::RowShape shape = op_checks::feature_rows(y, op);
  const int device = same_device({&dy, &y}, op);
  Tensor dx(y.shape(), y.dtype(), y.device());
  const int64_t rows = shape.rows, features = shape.features;
  if (rows == 0) return dx;
  dispatch_float(y, op, [&](auto zero) {
    using T = decltype(zero);
    backward_kernel<T><<<blocks_for(rows, 1), kRowThreads, 0, stream(device)>>>(
        dy.kernel_data<T>(), y.kernel_data<T>(), rows, features, dx.kernel_data<T>());
    check_launch("softmax backward_kernel");
  });
  return dx;
}

}  // namespace vitune::cuda
