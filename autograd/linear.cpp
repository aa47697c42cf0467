// linear: y = x W^T + b, the workhorse of every ViT layer.
#include "engine/ops.h"
#include "autograd/functions.h"

namespace vitune::autograd {

// Backward, with X = x flattened to [T, in] and dY = dy flattened to [T, out]:
//   dX = dY W              ([T, out] x [out, in])
//   dW = dY^T X            ([out, T] x [T, in]), summed over all T tokens
//   db = sum_t dY[t, :]
// For an element-masked W only the selected (j, k) of dW are formed:
//   dW[j, k] = sum_t dY[t, j] X[t, k]   (ops::masked_weight_grad, O(T * selected)).
// A frozen W skips its product entirely; dX is formed only when x needs a gradient.
Variable linear(const Variable& x, const Variable& weight, const Variable& bias) {
  const Tensor& xv = x.value();
  VITUNE_CHECK(weight.value().ndim() >= 2, "linear '", weight.name(), "': weight ",
               weight.value().str(), " is not a matrix");
  Tensor w = weight.value().reshape({weight.value().dim(0), -1});
  VITUNE_CHECK(xv.ndim() >= 1 && xv.dim(-1) == w.dim(1), "linear '", weight.name(),
               "': input ", xv.str(), " does not match weight ", w.str());
  int64_t out_features = w.dim(0), in_features = w.dim(1);
  Shape out_shape = xv.shape();
  out_shape.back() = out_features;
  Tensor y = Tensor::like(xv, out_shape);
  Tensor x2 = xv.reshape({-1, in_features});
  Tensor y2 = y.reshape({-1, out_features});
  ops::gemm(false, true, 1.0, x2, w, 0.0, y2);
  if (bias.defined()) {
    VITUNE_CHECK(bias.value().numel() == out_features, "linear '", bias.name(), "': bias ",
                 bias.value().str(), " for ", out_features, " outputs");
    ops::add_row_broadcast(y2, bias.value());
  }
  return make_result(y, {x, weight, bias}, "linear", [x, weight, bias, x2, w](const Tensor& dy) {
    Tensor dy2 = dy.reshape({-1, w.dim(0)});
    GradientSlot dw(weight), db(bias), dx(x);
    if (dw.wanted()) {
      if (Tensor* selected = dw.selected()) {
        ops::masked_weight_grad(dy2, x2, weight.grad_indices(), w.dim(1), *selected);
      } else {
        Tensor dw2 = dw.dense().reshape(w.shape());
        ops::gemm(true, false, 1.0, dy2, x2, dw.beta(), dw2);
        dw.commit();
      }
    }
    if (db.wanted()) {
      ops::sum_rows_into(dy2, db.accumulator());
      db.commit();
    }
    if (dx.wanted()) {
      Tensor dx2 = dx.dense().reshape({-1, w.dim(1)});
      ops::gemm(false, false, 1.0, dy2, w, dx.beta(), dx2);
      dx.commit();
    }
  });
}

}  // namespace vitune::autograd
