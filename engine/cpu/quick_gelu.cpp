// QuickGELU on the host, y = x * sigmoid(1.702 x), and its backward pass.
#include <cmath>

#include "engine/cpu/unary_op.h"
#include "engine/ops.h"
#include "engine/parallel.h"

namespace vitune::cpu {

namespace {

constexpr int64_t kGrain = 4096;
constexpr double kAlpha = 1.702;

// 1 / (1 + e^-z), computed from e^-|z| so that neither branch overflows.
template <typename T>
T sigmoid(T z) {
  const T e = std::exp(-std::fabs(z));
  return z >= 0 ? T(1) / (T(1) + e) : e / (T(1) + e);
}

template <typename T>
void forward_kernel(const T* x, int64_t n, T* y) {
  parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = x[i] * sigmoid(T(kAlpha) * x[i]);
  });
}

// y = x s(a x): dy/dx = s + a x s (1 - s).
template <typename T>
void backward_kernel(const T* dy, const T* x, int64_t n, T* dx) {
  parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const T s = sigmoid(T(kAlpha) * x[i]);
      dx[i] = dy[i] * (s + T(kAlpha) * x[i] * s * (T(1) - s));
    }
  });
}

}  // namespace

Tensor quick_gelu_forward(const Tensor& x) {
  return unary_forward(x, "quick_gelu_forward",
                       [](const auto* x, int64_t n, auto* y) { forward_kernel(x, n, y); });
}

Tensor quick_gelu_backward(const Tensor& dy, const Tensor& x) {
  return unary_backward(dy, x, "quick_gelu_backward",
                        [](const auto* dy, const auto* x, int64_t n, auto* dx) { backward_kernel(dy, x, n, dx); });
}

}  // namespace vitune::cpu
