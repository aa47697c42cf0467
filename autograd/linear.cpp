// linear: y = x W^T + b, the workhorse of every ViT layer, and the same layer with a
// LoRA adapter folded in.
#include "engine/autocast.h"
#include "engine/ops.h"
#include "autograd/functions.h"

namespace vitune::autograd {
namespace {

// The columns of X that a backward keeps instead of all of X: where W's masked gradient
// is the only product that reads X (`x_read_elsewhere` false) and its selection touches
// only some columns of W, those columns (Variable::grad_columns); else undefined. One
// entry per row of fc2 [64, 256] touches at most 64 of X's 256 columns, so the gradient
// reads at most a quarter of the bytes and X itself can be freed after the forward pass.
Tensor columns_to_keep(const Variable& weight, bool x_read_elsewhere) {
  return needs_grad(weight) && !x_read_elsewhere ? weight.grad_columns() : Tensor();
}

// What a backward keeps of the input X [T, in] for the products that read it (dW and,
// with LoRA, dA): nothing when none of them is wanted; the `kept_columns` of X alone
// where columns_to_keep gave some; under bf16 autocast, when X is f32 and W is not
// element-masked, X rounded to bf16, half the bytes: the autocast product rounds X to
// exactly these values, so the gradients keep their bits (the masked gradient is not an
// autocast product and keeps X in f32); else X itself.
Tensor saved_input(const Tensor& x2, bool read_in_backward, const Variable& weight, const Tensor& kept_columns) {
  if (!read_in_backward) return Tensor();
  if (kept_columns.defined()) return ops::gather_columns(x2, kept_columns);
  if (autocast_bf16() && x2.dtype() == DType::F32 && !weight.grad_indices().defined()) {
    return x2.to(DType::BF16);
  }
  return x2;
}

// out = alpha g^T X + beta out, X read from what saved_input kept: a bf16 X is widened
// (exactly) and multiplied as autocast multiplies, whatever the switch says during
// backward, so the product is the one the forward pass's setting asked for.
void product_with_input(double alpha, const Tensor& g, const Tensor& saved, double beta, Tensor& out,
                        const Variable& weight) {
  VITUNE_CHECK(saved.defined(), "linear '", weight.name(),
               "': a parameter became trainable between the forward pass and backward");
  if (saved.dtype() == DType::BF16) {
    ops::gemm_bf16(true, false, alpha, g, saved.to(DType::F32), beta, out);
  } else {
    ops::gemm(true, false, alpha, g, saved, beta, out);
  }
}

// y = x W^T + b, with x2 and w set to x and W flattened to matrices [T, in] and [out, in].
Tensor dense_forward(const Variable& x, const Variable& weight, const Variable& bias, Tensor& x2, Tensor& w) {
  const Tensor& xv = x.value();
  VITUNE_CHECK(weight.value().ndim() >= 2, "linear '", weight.name(), "': weight ",
               weight.value().str(), " is not a matrix");
  w = weight.value().reshape({weight.value().dim(0), -1});
  VITUNE_CHECK(xv.ndim() >= 1 && xv.dim(-1) == w.dim(1), "linear '", weight.name(),
               "': input ", xv.str(), " does not match weight ", w.str());
  int64_t out_features = w.dim(0), in_features = w.dim(1);
  Shape out_shape = xv.shape();
  out_shape.back() = out_features;
  Tensor y = Tensor::like(xv, out_shape);
  x2 = xv.reshape({-1, in_features});
  Tensor y2 = y.reshape({-1, out_features});
  if (bias.defined()) {
    VITUNE_CHECK(bias.value().numel() == out_features, "linear '", bias.name(), "': bias ",
                 bias.value().str(), " for ", out_features, " outputs");
    ops::linear_forward(x2, w, bias.value(), y2);
  } else {
    ops::gemm(false, true, 1.0, x2, w, 0.0, y2);
  }
  return y;
}

// The gradients of W and b, those that are wanted, from dY [T, out] and X [T, in]:
//   dW = dY^T X            ([out, T] x [T, in]), summed over all T tokens
//   db = sum_t dY[t, :]
// For an element-masked W only the selected (j, k) of dW are formed:
//   dW[j, k] = sum_t dY[t, j] X[t, k]   (ops::masked_weight_grad, O(T * selected)),
// from X's touched columns alone where saved_input kept only those (`kept_columns`, the
// selection's grad_columns at the forward pass, undefined where X was kept whole; the
// renumbered indices point into them: the same products, added in the same order).
// Columns kept for a selection that has since changed no longer hold what the gradient
// needs: that is refused.
// A frozen W or b skips its product entirely.
void weight_and_bias_grads(const Tensor& dy2, const Tensor& x2, const Tensor& kept_columns, const Tensor& w,
                           const Variable& weight, const Variable& bias) {
  GradientSlot dw(weight), db(bias);
  if (dw.wanted()) {
    VITUNE_CHECK(!kept_columns.defined() || weight.grad_columns().same_storage(kept_columns), "linear '",
                 weight.name(), "': its selection changed between the forward pass and backward, which read only "
                 "the input columns of the old one");
    if (Tensor* selected = dw.selected()) {
      const bool columns_only = kept_columns.defined();
      ops::masked_weight_grad(dy2, x2, columns_only ? weight.grad_indices_in_columns() : weight.grad_indices(),
                              x2.dim(1), *selected);
    } else {
      Tensor dw2 = dw.dense().reshape(w.shape());
      product_with_input(1.0, dy2, x2, dw.beta(), dw2, weight);
      dw.commit();
    }
  }
  if (db.wanted()) {
    ops::sum_rows_into(dy2, db.accumulator());
    db.commit();
  }
}

}  // namespace

// Backward, with X = x flattened to [T, in] and dY = dy flattened to [T, out]: dW and db
// as above, and
//   dX = dY W              ([T, out] x [out, in]),
// formed only when x needs a gradient. X is kept as saved_input says; x itself is held
// only to receive dX, so its value is freed with the forward pass's last handle.
Variable linear(const Variable& x, const Variable& weight, const Variable& bias) {
  Tensor x2, w;
  Tensor y = dense_forward(x, weight, bias, x2, w);
  const Tensor kept_columns = columns_to_keep(weight, /*x_read_elsewhere=*/false);
  Tensor saved = saved_input(x2, needs_grad(weight), weight, kept_columns);
  return make_result(y, {x, weight, bias}, "linear",
                     [x = x.on_tape(), weight, bias, saved, kept_columns, w](const Tensor& dy) {
                       Tensor dy2 = dy.reshape({-1, w.dim(0)});
                       weight_and_bias_grads(dy2, saved, kept_columns, w, weight, bias);
                       GradientSlot dx(x);
                       if (dx.wanted()) {
                         Tensor dx2 = dx.dense().reshape({-1, w.dim(1)});
                         ops::gemm(false, false, 1.0, dy2, w, dx.beta(), dx2);
                         dx.commit();
                       }
                     });
}

// Forward: Y = X W^T + b, then H = X A^T ([T, r]) and Y += s H B^T, all into the one
// output; only X (as saved_input says) and the small H are saved. Backward, with
// G = dY B ([T, r], the only new temporary besides dX):
//   dB = s dY^T H          ([out, T] x [T, r])
//   dA = s G^T X           ([r, T] x [T, in])
//   dX = dY W + s G A      ([T, out] x [out, in], then [T, r] x [r, in] added in place)
// dW and db as for linear, usually skipped because LoRA freezes them; W + s B A is never
// formed.
Variable lora_linear(const Variable& x, const Variable& weight, const Variable& bias, const Variable& lora_a,
                     const Variable& lora_b, double scaling) {
  Tensor x2, w;
  Tensor y = dense_forward(x, weight, bias, x2, w);
  const Tensor& a = lora_a.value();
  const Tensor& b = lora_b.value();
  VITUNE_CHECK(a.ndim() == 2 && a.dim(1) == w.dim(1) && b.ndim() == 2 && b.dim(0) == w.dim(0) &&
                   b.dim(1) == a.dim(0),
               "lora_linear '", weight.name(), "': adapter A ", a.str(), " and B ", b.str(),
               " do not fit weight ", w.str(), " (expected A [r, in] and B [out, r])");
  Tensor h = Tensor::like(x2, {x2.dim(0), a.dim(0)});
  ops::gemm(false, true, 1.0, x2, a, 0.0, h);
  Tensor y2 = y.reshape({-1, w.dim(0)});
  ops::gemm(false, true, scaling, h, b, 1.0, y2);
  const Tensor kept_columns = columns_to_keep(weight, /*x_read_elsewhere=*/needs_grad(lora_a));
  Tensor saved = saved_input(x2, needs_grad(weight) || needs_grad(lora_a), weight, kept_columns);
  return make_result(y, {x, weight, bias, lora_a, lora_b}, "lora_linear",
                     [x = x.on_tape(), weight, bias, lora_a, lora_b, saved, kept_columns, w, h,
                      scaling](const Tensor& dy) {
                       Tensor dy2 = dy.reshape({-1, w.dim(0)});
                       weight_and_bias_grads(dy2, saved, kept_columns, w, weight, bias);
                       GradientSlot db(lora_b), da(lora_a), dx(x);
                       if (db.wanted()) {
                         ops::gemm(true, false, scaling, dy2, h, db.beta(), db.dense());
                         db.commit();
                       }
                       if (!da.wanted() && !dx.wanted()) return;
                       Tensor g = Tensor::like(h, h.shape());
                       ops::gemm(false, false, 1.0, dy2, lora_b.value(), 0.0, g);
                       if (da.wanted()) {
                         product_with_input(scaling, g, saved, da.beta(), da.dense(), lora_a);
                         da.commit();
                       }
                       if (dx.wanted()) {
                         Tensor dx2 = dx.dense().reshape({-1, w.dim(1)});
                         ops::gemm(false, false, 1.0, dy2, w, dx.beta(), dx2);
                         ops::gemm(false, false, scaling, g, lora_a.value(), 1.0, dx2);
                         dx.commit();
                       }
                     });
}

}  // namespace vitune::autograd
