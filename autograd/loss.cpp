// cross_entropy on the tape.
#include "engine/ops.h"
#include "autograd/functions.h"

namespace vitune::autograd {

// L = (1/B) sum_b sum_c -t_bc log p_bc with p = softmax(logits), t the smoothed target
// (1-s) onehot + s/C. Since sum_c t_bc = 1:  dL/dlogits_bc = (p_bc - t_bc) / B.
Variable cross_entropy(const Variable& logits, const Tensor& labels, double smoothing) {
  VITUNE_CHECK(smoothing >= 0.0 && smoothing < 1.0, "cross_entropy: label smoothing must be in [0, 1), got ",
               smoothing);
  Tensor probs;
  double loss = ops::cross_entropy_forward(logits.value(), labels, smoothing, probs);
  Tensor value = Tensor::full({1}, loss, logits.value().dtype(), logits.value().device());
  return make_result(value, {logits}, "cross_entropy", [logits, labels, smoothing, probs](const Tensor& dl) {
    accumulate_grad(logits, ops::cross_entropy_backward(probs, labels, smoothing, dl.item(0)));
  });
}

}  // namespace vitune::autograd
