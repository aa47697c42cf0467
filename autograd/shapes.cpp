// Reshapes and token bookkeeping on the tape: each backward is the adjoint copy.
#include "engine/ops.h"
#include "autograd/functions.h"

namespace vitune::autograd {

// A reshape moves no values: dx = dy read in x's shape.
Variable reshape(const Variable& x, const Shape& shape) {
  Shape original = x.shape();
  return make_result(x.value().reshape(shape), {x}, "reshape", [x, original](const Tensor& dy) {
    accumulate_grad(x, dy.reshape(original));
  });
}

// Patchify is a permutation of pixels into patch vectors; its adjoint puts each
// gradient back at its pixel.
Variable patchify(const Variable& images, int patch) {
  Shape image_shape = images.shape();
  return make_result(ops::patchify(images.value(), patch), {images}, "patchify",
                     [images, image_shape, patch](const Tensor& dy) {
                       accumulate_grad(images, ops::unpatchify(dy, image_shape, patch));
                     });
}

// y = [token; x] per sequence:  dtoken = sum_b dy[b, 0, :],  dx = dy[:, 1:, :].
Variable prepend_token(const Variable& token, const Variable& x) {
  return make_result(ops::prepend_token(token.value(), x.value()), {token, x}, "prepend_token",
                     [token, x](const Tensor& dy) {
                       GradientSlot dt(token);
                       if (dt.wanted()) {
                         Tensor dt_flat = dt.accumulator().reshape({-1});
                         ops::sum_rows_into(ops::select_token(dy, 0), dt_flat);
                         dt.commit();
                       }
                       if (needs_grad(x)) accumulate_grad(x, ops::drop_first_token(dy));
                     });
}

// y = x[:, index, :]:  dx is zero except dx[:, index, :] = dy.
Variable select_token(const Variable& x, int64_t index) {
  int64_t tokens = x.value().dim(1);
  return make_result(ops::select_token(x.value(), index), {x}, "select_token",
                     [x, tokens, index](const Tensor& dy) {
                       accumulate_grad(x, ops::place_token(dy, tokens, index));
                     });
}

// y = zeros with y[:, index, :] = x:  dx = dy[:, index, :].
Variable place_token(const Variable& x, int64_t tokens, int64_t index) {
  return make_result(ops::place_token(x.value(), tokens, index), {x}, "place_token",
                     [x, index](const Tensor& dy) { accumulate_grad(x, ops::select_token(dy, index)); });
}

// y[b] = (1/n) sum_{t >= first} x[b, t, :] with n = N - first:
// dx[b, t, :] = dy[b] / n for t >= first, 0 before.
Variable mean_tokens(const Variable& x, int64_t first) {
  const Tensor& xv = x.value();
  VITUNE_CHECK(xv.ndim() == 3 && first >= 0 && first < xv.dim(1), "mean_tokens: cannot average tokens from ",
               first, " of ", xv.str());
  const int64_t batch = xv.dim(0), tokens = xv.dim(1), width = xv.dim(2);
  const double inverse = 1.0 / double(tokens - first);
  Tensor x_rows = xv.reshape({batch * tokens, width});
  Tensor sums = Tensor::zeros({batch, width}, xv.dtype(), xv.device());
  for (int64_t b = 0; b < batch; ++b) {
    Tensor row = sums.rows(b, b + 1).reshape({width});
    ops::sum_rows_into(x_rows.rows(b * tokens + first, (b + 1) * tokens), row);
  }
  return make_result(ops::scale(sums, inverse), {x}, "mean_tokens",
                     [x, first, inverse](const Tensor& dy) {
                       const Tensor& value = x.value();
                       const int64_t batch = value.dim(0), tokens = value.dim(1), width = value.dim(2);
                       Tensor dx = Tensor::zeros_like(value);
                       Tensor dx_rows = dx.reshape({batch * tokens, width});
                       Tensor scaled = ops::scale(dy, inverse);
                       for (int64_t b = 0; b < batch; ++b) {
                         Tensor block = dx_rows.rows(b * tokens + first, (b + 1) * tokens);
                         ops::add_row_broadcast(block, scaled.rows(b, b + 1).reshape({width}));
                       }
                       accumulate_grad(x, dx);
                     });
}

}  // namespace vitune::autograd
