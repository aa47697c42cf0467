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
    // The kernel writes dx (a fresh tensor it makes) and adds into dweight and dbias.
    GradientSlot dw(weight), db(bias);
    Tensor dx;
    ops::layer_norm_backward(dy, x.value(), weight.value(), mean, rstd, needs_grad(x) ? &dx : nullptr,
                             dw.wanted() ? &dw.accumulator() : nullptr, db.wanted() ? &db.accumulator() : nullptr);
    if (dx.defined()) accumulate_grad(x, dx);
    if (dw.wanted()) dw.commit();
    if (db.wanted()) db.commit();
  });
}

}  // namespace vitune::autograd
