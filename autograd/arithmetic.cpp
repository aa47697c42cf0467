// add, add_broadcast_batch, scale, mul_channels and matmul on the tape.
#include "engine/ops.h"
#include "autograd/functions.h"

namespace vitune::autograd {

// c = a + b:  da = dc, db = dc.
Variable add(const Variable& a, const Variable& b) {
  VITUNE_CHECK(a.shape() == b.shape(), "add: shapes ", shape_str(a.shape()), " and ",
               shape_str(b.shape()), " differ");
  return make_result(ops::add(a.value(), b.value()), {a, b}, "add", [a, b](const Tensor& dc) {
    if (needs_grad(a)) accumulate_grad(a, dc);
    if (needs_grad(b)) accumulate_grad(b, dc);
  });
}

// y[b, ...] = x[b, ...] + p[0, ...]:  dx = dy,  dp = sum over b of dy[b, ...].
Variable add_broadcast_batch(const Variable& x, const Variable& p) {
  const Tensor& xv = x.value();
  Shape expected = xv.shape();
  VITUNE_CHECK(!expected.empty(), "add_broadcast_batch: scalar input");
  expected[0] = 1;
  VITUNE_CHECK(p.shape() == expected, "add_broadcast_batch: ", p.value().str(), " cannot be added to every item of ",
               xv.str());
  Tensor y = xv.clone();
  Tensor y_rows = y.reshape({xv.dim(0), -1});
  ops::add_row_broadcast(y_rows, p.value().reshape({-1}));
  return make_result(y, {x, p}, "add_broadcast_batch", [x, p](const Tensor& dy) {
    if (needs_grad(x)) accumulate_grad(x, dy);
    GradientSlot dp(p);
    if (dp.wanted()) {
      Tensor dp_flat = dp.accumulator().reshape({-1});
      ops::sum_rows_into(dy.reshape({dy.dim(0), -1}), dp_flat);
      dp.commit();
    }
  });
}

// y = f x:  dx = f dy.
Variable scale(const Variable& x, double factor) {
  return make_result(ops::scale(x.value(), factor), {x}, "scale", [x, factor](const Tensor& dy) {
    accumulate_grad(x, ops::scale(dy, factor));
  });
}

// y = x * G with G the rows of x each set to gamma:  dx = dy * G,
// dgamma = sum over rows of dy * x.
Variable mul_channels(const Variable& x, const Variable& gamma) {
  const Tensor& xv = x.value();
  VITUNE_CHECK(gamma.value().ndim() == 1 && xv.ndim() >= 1 && gamma.value().dim(0) == xv.dim(-1),
               "mul_channels: gamma ", gamma.value().str(), " does not match the last dimension of ", xv.str());
  Tensor broadcast = Tensor::zeros_like(xv);
  Tensor broadcast_rows = broadcast.reshape({-1, xv.dim(-1)});
  ops::add_row_broadcast(broadcast_rows, gamma.value());
  return make_result(ops::mul(xv, broadcast), {x, gamma}, "mul_channels", [x, gamma, broadcast](const Tensor& dy) {
    if (needs_grad(x)) accumulate_grad(x, ops::mul(dy, broadcast));
    GradientSlot dgamma(gamma);
    if (dgamma.wanted()) {
      Tensor product = ops::mul(dy, x.value());
      ops::sum_rows_into(product.reshape({-1, product.dim(-1)}), dgamma.accumulator());
      dgamma.commit();
    }
  });
}

// C = A B (per stack item when 3-D):  dA = dC B^T,  dB = A^T dC.
Variable matmul(const Variable& a, const Variable& b) {
  const Tensor& av = a.value();
  const Tensor& bv = b.value();
  bool batched = av.ndim() == 3;
  VITUNE_CHECK((av.ndim() == 2 || batched) && bv.ndim() == av.ndim(), "matmul: expects two 2-D or two 3-D operands, got ",
               av.str(), " and ", bv.str());
  auto product = [batched](bool ta, bool tb, const Tensor& x, const Tensor& y, double beta, Tensor& out) {
    if (batched) {
      ops::gemm_batched(ta, tb, 1.0, x, y, beta, out);
    } else {
      ops::gemm(ta, tb, 1.0, x, y, beta, out);
    }
  };
  Shape out_shape = av.shape();
  out_shape.back() = bv.dim(-1);
  Tensor c = Tensor::like(av, out_shape);
  product(false, false, av, bv, 0.0, c);
  return make_result(c, {a, b}, "matmul", [a, b, product](const Tensor& dc) {
    GradientSlot da(a), db(b);
    if (da.wanted()) {
      product(false, true, dc, b.value(), da.beta(), da.dense());
      da.commit();
    }
    if (db.wanted()) {
      product(true, false, a.value(), dc, db.beta(), db.dense());
      db.commit();
    }
  });
}

}  // namespace vitune::autograd
