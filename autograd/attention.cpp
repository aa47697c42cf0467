// The fused self-attention core on the tape.
#include "engine/ops.h"
#include "autograd/functions.h"

namespace vitune::autograd {

// Per batch item and head, with Q, K, V [N, dh] sliced from qkv, s = 1/sqrt(dh):
//   S = s Q K^T,  P = softmax_rows(S),  O = P V.
// Backward from dO:
//   dV = P^T dO
//   dP = dO V^T
//   dS = P * (dP - rowsum(dP * P))      (softmax backward, row by row)
//   dQ = s dS K,   dK = s dS^T Q
// and dQ, dK, dV are written back into the fused [B, N, 3D] layout.
Variable attention(const Variable& qkv, int heads) {
  Tensor probs;
  Tensor ctx = ops::attention_forward(qkv.value(), heads, probs);
  return make_result(ctx, {qkv}, "attention", [qkv, probs, heads](const Tensor& dctx) {
    accumulate_grad(qkv, ops::attention_backward(dctx, qkv.value(), probs, heads));
  });
}

}  // namespace vitune::autograd
