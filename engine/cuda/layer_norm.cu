// LayerNorm on CUDA: per-row mean and biased variance (two passes, sums in double), the
// affine map, and the backward pass for the input, the weight and the bias. The row
// kernels give one thread block to each row, each thread owning the columns threadIdx.x,
// threadIdx.x + blockDim.x, ...; the weight and bias gradients are column sums over rows
// in a fixed two-pass order (engine/cuda/column_sums.cuh), without atomics.
#include <cstdint>

#include "engine/cpu/check.h"
#include "engine/cuda/block_reduce.cuh"
#include "engine/cuda/column_sums.cuh"
#include "engine/cuda/cuda_context.h"
#include "engine/op_checks.h"
#include "engine/ops.h"

namespace vitune::cuda {

namespace {

template <typename T>
__global__ void forward_kernel(const T* x, const T* weight, const T* bias, double eps,
                               int64_t rows, int64_t features, T* y, T* mean_out, T* rstd_out) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * features;
    double local_sum = 0;
    for (int64_t c = threadIdx.x; c < features; c += blockDim.x) local_sum += double(xr[c]);
    const double mean = block_sum(local_sum) / double(features);
    double local_squares = 0;
    for (int64_t c = threadIdx.x; c < features; c += blockDim.x) {
      const double centred = double(xr[c]) - mean;
      local_squares += centred * centred;
    }
    const double var = block_sum(local_squares) / double(features);
    const T m = T(mean);
    const T rstd = T(1.0 / sqrt(var + eps));
    if (threadIdx.x == 0) {
      mean_out[r] = m;
      rstd_out[r] = rstd;
    }
    T* yr = y + r * features;
    for (int64_t c = threadIdx.x; c < features; c += blockDim.x) {
      yr[c] = (xr[c] - m) * rstd * weight[c] + bias[c];
    }
  }
}

// dx for every row (the derivation is above layer_norm_backward):
//   dx_j = rstd (g_j - mean(g) - xhat_j mean(g xhat)),  g = dy * w,  xhat = (x - mean) rstd.
// A thread reads dy and x only at its own columns, and writes dx only there after the
// row's two sums, so dx may share storage with dy or x.
template <typename T>
__global__ void input_grad_kernel(const T* dy, const T* x, const T* weight, const T* mean,
                                  const T* rstd, int64_t rows, int64_t features, T* dx) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* dyr = dy + r * features;
    const T* xr = x + r * features;
    const T m = mean[r], rs = rstd[r];
    double local_g = 0, local_g_xhat = 0;
    for (int64_t c = threadIdx.x; c < features; c += blockDim.x) {
      const double g = double(dyr[c] * weight[c]);
      local_g += g;
      local_g_xhat += g * double((xr[c] - m) * rs);
    }
    const T mean_g = T(block_sum(local_g) / double(features));
    const T mean_g_xhat = T(block_sum(local_g_xhat) / double(features));
    T* dxr = dx + r * features;
    for (int64_t c = threadIdx.x; c < features; c += blockDim.x) {
      const T xhat = (xr[c] - m) * rs;
      dxr[c] = rs * (dyr[c] * weight[c] - mean_g - xhat * mean_g_xhat);
    }
  }
}

// The weight gradient's term dy[r, c] * xhat[r, c], summed over rows r.
template <typename T>
struct WeightGradTerm {
  const T* dy;
  const T* x;
  const T* mean;
  const T* rstd;
  int64_t features;
  __device__ double operator()(int64_t r, int64_t c) const {
    const int64_t i = r * features + c;
    return double(dy[i]) * double((x[i] - mean[r]) * rstd[r]);
  }
};

// The bias gradient's term dy[r, c], summed over rows r.
template <typename T>
struct BiasGradTerm {
  const T* dy;
  int64_t features;
  __device__ double operator()(int64_t r, int64_t c) const { return double(dy[r * features + c]); }
};

}  // namespace

Tensor layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                          Tensor& mean, Tensor& rstd) {
  const char* op = "layer_norm_forward";
  check_cuda_float(x, op);
  const op_checks::RowShape shape =
      op_checks::layer_norm_forward_shape(x, weight, bias, eps, op, check_on_cuda);
  const int64_t rows = shape.rows, features = shape.features;
  const int device = same_device({&x, &weight, &bias}, op);
  Tensor y(x.shape(), x.dtype(), x.device());
  mean = Tensor({rows}, x.dtype(), x.device());
  rstd = Tensor({rows}, x.dtype(), x.device());
  if (rows == 0) return y;
  dispatch_float(x, op, [&](auto zero) {
    using T = decltype(zero);
    forward_kernel<T><<<blocks_for(rows, 1), kRowThreads, 0, stream(device)>>>(
        x.kernel_data<T>(), weight.kernel_data<T>(), bias.kernel_data<T>(), eps, rows, features, y.kernel_data<T>(),
        mean.kernel_data<T>(), rstd.kernel_data<T>());
    check_launch("layer_norm forward_kernel");
  });
  return y;
}

// Backward. With xhat = (x - mean) * rstd and y = xhat * w + b, per row of F features:
//   d mean / d x_j = 1/F,   d var / d x_j = 2 (x_j - mean) / F   (the mean's own
//   dependence drops out because sum_k (x_k - mean) = 0),
//   d rstd / d x_j = -1/2 (var + eps)^(-3/2) * 2 (x_j - mean) / F = -rstd^2 xhat_j / F,
//   d xhat_i / d x_j = rstd (delta_ij - 1/F) + (x_i - mean) d rstd / d x_j
//                    = rstd (delta_ij - 1/F - xhat_i xhat_j / F).
// With g = dy * w (the gradient reaching xhat):
//   dx_j = sum_i g_i d xhat_i / d x_j = rstd (g_j - mean(g) - xhat_j mean(g * xhat)).
// The affine parameters are shared by all rows, so their gradients sum over rows:
//   dw += sum_rows dy * xhat,   db += sum_rows dy.
void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                         const Tensor& mean, const Tensor& rstd, Tensor* dx, Tensor* dweight,
                         Tensor* dbias) {
  const char* op = "layer_norm_backward";
  check_output_grad(dy, x, op);
  const op_checks::RowShape shape =
      op_checks::layer_norm_backward_shape(x, weight, mean, rstd, dweight, dbias, op, check_on_cuda);
  const int64_t rows = shape.rows, features = shape.features;
  if (dx && dx->defined()) {
    check_on_cuda(*dx, op);
    cpu::check_same(*dx, x, op);
  }
  const int device = same_device({&dy, &x, &weight, &mean, &rstd}, op);
  for (const Tensor* output : {dx, dweight, dbias}) {
    if (output && output->defined()) same_device({&x, output}, op);
  }
  if (dx && !dx->defined()) *dx = Tensor(x.shape(), x.dtype(), x.device());
  if (rows == 0) return;
  cudaStream_t s = stream(device);
  dispatch_float(x, op, [&](auto zero) {
    using T = decltype(zero);
    // The parameter gradients go first: they still read dy and x, which dx may share
    // (the stream runs the kernels in this order).
    if (dweight) {
      add_column_sums(WeightGradTerm<T>{dy.kernel_data<T>(), x.kernel_data<T>(), mean.kernel_data<T>(), rstd.kernel_data<T>(),
                                        features},
                      rows, features, dweight->kernel_data<T>(), device);
    }
    if (dbias) {
      add_column_sums(BiasGradTerm<T>{dy.kernel_data<T>(), features}, rows, features, dbias->kernel_data<T>(),
                      device);
    }
    if (dx) {
      input_grad_kernel<T><<<blocks_for(rows, 1), kRowThreads, 0, s>>>(
          dy.kernel_data<T>(), x.kernel_data<T>(), weight.kernel_data<T>(), mean.kernel_data<T>(), rstd.kernel_data<T>(), rows,
          features, dx->kernel_data<T>());
      check_launch("layer_norm input_grad_kernel");
    }
  });
}

}  // namespace vitune::cuda
