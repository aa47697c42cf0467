// LayerNorm on the host: per-row mean and biased variance (two passes, sums in double in
// a fixed order, engine/cpu/lane_sums.h), the affine map, and the backward pass for the
// input, the weight and the bias.
#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/cpu/check.h"
#include "engine/cpu/isa.h"
#include "engine/cpu/lane_sums.h"
#include "engine/op_checks.h"
#include "engine/ops.h"

namespace vitune::cpu {

namespace {

template <typename T>
void forward_kernel(const T* x, const T* weight, const T* bias, double eps, int64_t rows,
                    int64_t features, T* y, T* mean_out, T* rstd_out) {
  parallel_for_simd(rows, 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* xr = x + r * features;
      const double mean = lane_sum(features, [&](int64_t c) { return double(xr[c]); }) / double(features);
      const double var = lane_sum(features, [&](int64_t c) {
                           const double centred = double(xr[c]) - mean;
                           return centred * centred;
                         }) /
                         double(features);
      const T m = T(mean);
      const T rstd = T(1.0 / std::sqrt(var + eps));
      mean_out[r] = m;
      rstd_out[r] = rstd;
      T* yr = y + r * features;
      for (int64_t c = 0; c < features; ++c) yr[c] = (xr[c] - m) * rstd * weight[c] + bias[c];
    }
  });
}

// dx for every row; each row is independent.
template <typename T>
void input_grad_kernel(const T* dy, const T* x, const T* weight, const T* mean, const T* rstd,
                       int64_t rows, int64_t features, T* dx) {
  parallel_for_simd(rows, 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* dyr = dy + r * features;
      const T* xr = x + r * features;
      const T m = mean[r], rs = rstd[r];
      const double sum_g = lane_sum(features, [&](int64_t c) { return double(dyr[c] * weight[c]); });
      const double sum_g_xhat = lane_sum(features, [&](int64_t c) {
        return double(dyr[c] * weight[c]) * double((xr[c] - m) * rs);
      });
      const T mean_g = T(sum_g / double(features));
      const T mean_g_xhat = T(sum_g_xhat / double(features));
      T* dxr = dx + r * features;
      for (int64_t c = 0; c < features; ++c) {
        const T xhat = (xr[c] - m) * rs;
        dxr[c] = rs * (dyr[c] * weight[c] - mean_g - xhat * mean_g_xhat);
      }
    }
  });
}

// dweight[c] += sum_r dy[r,c] * xhat[r,c] and dbias[c] += sum_r dy[r,c], summed over
// fixed chunks of rows (cpu::chunked_column_sums), so every column's sum has the same
// order whatever the thread count. Either output may be null.
template <typename T>
void param_grad_kernel(const T* dy, const T* x, const T* mean, const T* rstd, int64_t rows,
                       int64_t features, T* dweight, T* dbias) {
  const std::vector<double> sums = chunked_column_sums(rows, features, 2, [&](int64_t r, double* into) {
    const T* dyr = dy + r * features;
    const T* xr = x + r * features;
    const T m = mean[r], rs = rstd[r];
    double* sum_w = into;
    double* sum_b = into + features;
    for (int64_t c = 0; c < features; ++c) {
      sum_w[c] += double(dyr[c]) * double((xr[c] - m) * rs);
      sum_b[c] += double(dyr[c]);
    }
  });
  for (int64_t c = 0; c < features; ++c) {
    if (dweight) dweight[c] += T(sums[size_t(c)]);
    if (dbias) dbias[c] += T(sums[size_t(features + c)]);
  }
}

}  // namespace

Tensor layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                          Tensor& mean, Tensor& rstd) {
  const char* op = "layer_norm_forward";
  cpu::check_float(x, op);
  const op_checks::RowShape shape =
      op_checks::layer_norm_forward_shape(x, weight, bias, eps, op, cpu::check_host);
  const int64_t rows = shape.rows, features = shape.features;
  Tensor y(x.shape(), x.dtype(), x.device());
  mean = Tensor({rows}, x.dtype(), x.device());
  rstd = Tensor({rows}, x.dtype(), x.device());
  cpu::dispatch_float(x, op, [&](auto zero) {
    using T = decltype(zero);
    forward_kernel<T>(x.kernel_data<T>(), weight.kernel_data<T>(), bias.kernel_data<T>(), eps, rows, features,
                      y.kernel_data<T>(), mean.kernel_data<T>(), rstd.kernel_data<T>());
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
  cpu::check_output_grad(dy, x, op);
  const op_checks::RowShape shape =
      op_checks::layer_norm_backward_shape(x, weight, mean, rstd, dweight, dbias, op, cpu::check_host);
  const int64_t rows = shape.rows, features = shape.features;
  if (dx) {
    if (dx->defined()) {
      cpu::check_host(*dx, op);
      cpu::check_same(*dx, x, op);
    } else {
      *dx = Tensor(x.shape(), x.dtype(), x.device());
    }
  }
  cpu::dispatch_float(x, op, [&](auto zero) {
    using T = decltype(zero);
    // The parameter gradients go first: they still read dy and x, which dx may share.
    if (dweight || dbias) {
      param_grad_kernel<T>(dy.kernel_data<T>(), x.kernel_data<T>(), mean.kernel_data<T>(), rstd.kernel_data<T>(), rows,
                           features, dweight ? dweight->kernel_data<T>() : nullptr,
                           dbias ? dbias->kernel_data<T>() : nullptr);
    }
    if (dx) {
      input_grad_kernel<T>(dy.kernel_data<T>(), x.kernel_data<T>(), weight.kernel_data<T>(), mean.kernel_data<T>(),
                           rstd.kernel_data<T>(), rows, features, dx->kernel_data<T>());
    }
  });
}

}  // namespace vitune::cpu
