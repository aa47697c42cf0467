// layer_norm on the tape.
#include "engine/ops.h"
#include "autograd/functions.h"

namespace vitune::autograd {

// Backward per row of d features, with xhat = (x - mean) * rstd and g = dy * w:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
//   dw = sum over rows of dy * xhat,   db = sum over rows of dy
// (the two mean terms come from the dependence of mean and rstd on every x of the row).
// The kernel forms only the pieces that are asked for.
Variable layer_norm(const Variable& x, const Variable& weight, const Variable& bias, double eps) {
  Tensor mean, rstd;
  Tensor y = ops::layer_norm_forward(x.value(), weight.value(), bias.value(), eps, mean, rstd);
  return make_result(y, {x, weight, bias}, "layer_norm", [x, weight, bias, mean, rstd](const Tensor& dy) {
    Tensor dx = needs_grad(x) ? Tensor(x.value().shape(), dy.dtype()) : Tensor();
    Tensor* dw = needs_grad(weight) ? dense_leaf_grad(weight) : nullptr;
    Tensor* db = needs_grad(bias) ? dense_leaf_grad(bias) : nullptr;
    // A masked or inner weight/bias receives a fresh dense gradient, handed over below.
    Tensor dw_fresh, db_fresh;
    if (needs_grad(weight) && !dw) dw = &(dw_fresh = Tensor::zeros(weight.value().shape(), dy.dtype()));
    if (needs_grad(bias) && !db) db = &(db_fresh = Tensor::zeros(bias.value().shape(), dy.dtype()));
    ops::layer_norm_backward(dy, x.value(), weight.value(), mean, rstd, dx.defined() ? &dx : nullptr,
                             dw, db);
    if (dx.defined()) accumulate_grad(x, dx);
    if (dw_fresh.defined()) accumulate_grad(weight, dw_fresh);
    if (db_fresh.defined()) accumulate_grad(bias, db_fresh);
  });
}

}  // namespace vitune::autograd
