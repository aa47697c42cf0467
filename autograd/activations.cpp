// gelu, quick_gelu and softmax on the tape.
#include "engine/ops.h"
#include "autograd/functions.h"

namespace vitune::autograd {

// GELU(x) = x * Phi(x) with Phi the standard normal CDF (exact, via erf).
// dGELU/dx = Phi(x) + x * phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi).
Variable gelu(const Variable& x) {
  Tensor y = ops::gelu_forward(x.value());
  return make_result(y, {x}, "gelu", [x](const Tensor& dy) {
    accumulate_grad(x, ops::gelu_backward(dy, x.value()));
  });
}

// y = x s(a x) with s the logistic sigmoid and a = 1.702; s' = s (1 - s), so
// dy/dx = s + a x s (1 - s).
Variable quick_gelu(const Variable& x) {
  Tensor y = ops::quick_gelu_forward(x.value());
  return make_result(y, {x}, "quick_gelu", [x](const Tensor& dy) {
    accumulate_grad(x, ops::quick_gelu_backward(dy, x.value()));
  });
}

// y = softmax(x) per row. Jacobian dy_i/dx_j = y_i (delta_ij - y_j), so
//   dx_j = sum_i dy_i y_i (delta_ij - y_j) = y_j (dy_j - sum_i dy_i y_i).
Variable softmax(const Variable& x) {
  Tensor y = ops::softmax_forward(x.value());
  return make_result(y, {x}, "softmax", [x, y](const Tensor& dy) {
    accumulate_grad(x, ops::softmax_backward(dy, y));
  });
}

}  // namespace vitune::autograd
