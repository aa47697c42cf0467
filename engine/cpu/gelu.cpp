// GELU on the host in its exact form, y = x * Phi(x) with Phi the standard normal CDF
// written through erf, and its backward pass.
#include <cmath>

#include "engine/cpu/check.h"
#include "engine/ops.h"
#include "engine/parallel.h"

namespace vitune::ops {

namespace {

// Elements per parallel task: enough work to be worth a thread.
constexpr int64_t kGrain = 4096;

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

template <typename T>
void forward_kernel(const T* x, int64_t n, T* y) {
  parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      y[i] = x[i] * T(0.5) * (T(1) + std::erf(x[i] * T(kInvSqrt2)));
    }
  });
}

template <typename T>
void backward_kernel(const T* dy, const T* x, int64_t n, T* dx) {
  parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const T cdf = T(0.5) * (T(1) + std::erf(x[i] * T(kInvSqrt2)));
      const T pdf = T(kInvSqrt2Pi) * std::exp(T(-0.5) * x[i] * x[i]);
      dx[i] = dy[i] * (cdf + x[i] * pdf);
    }
  });
}

}  // namespace

Tensor gelu_forward(const Tensor& x) {
  const char* op = "gelu_forward";
  cpu::check_float(x, op);
  Tensor y(x.shape(), x.dtype());
  cpu::dispatch_float(x, op, [&](auto zero) {
    using T = decltype(zero);
    forward_kernel<T>(x.data<T>(), x.numel(), y.data<T>());
  });
  return y;
}

// Backward. y = x Phi(x) with Phi' = phi, the standard normal density
// phi(x) = exp(-x^2 / 2) / sqrt(2 pi), so dy/dx = Phi(x) + x phi(x) and dx = dy (Phi + x phi).
Tensor gelu_backward(const Tensor& dy, const Tensor& x) {
  const char* op = "gelu_backward";
  cpu::check_float(x, op);
  cpu::check_host(dy, op);
  cpu::check_same(dy, x, op);
  Tensor dx(x.shape(), x.dtype());
  cpu::dispatch_float(x, op, [&](auto zero) {
    using T = decltype(zero);
    backward_kernel<T>(dy.data<T>(), x.data<T>(), x.numel(), dx.data<T>());
  });
  return dx;
}

}  // namespace vitune::ops
