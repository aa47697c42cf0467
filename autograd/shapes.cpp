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

}  // namespace vitune::autograd
