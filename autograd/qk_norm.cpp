// timm's qk_norm (Attention(qk_norm=True)) on the fused qkv, composed on the tape: the
// token of each image is viewed as [3, D] (q, k, v), q and k are taken out, normalised
// over each head's entries by the LayerNorm function and put back beside v.
#include "autograd/functions.h"
#include "engine/error.h"

namespace vitune::autograd {

Variable qk_layer_norm(const Variable& qkv, int heads, const Variable& q_weight, const Variable& q_bias,
                       const Variable& k_weight, const Variable& k_bias, double eps) {
  const Shape shape = qkv.shape();
  VITUNE_CHECK(shape.size() == 3 && heads >= 1 && shape[2] % (3 * int64_t(heads)) == 0, "qk_layer_norm: expected ",
               "qkv [B, N, 3D] with D divisible by ", heads, " heads, got ", qkv.value().str());
  const int64_t rows = shape[0] * shape[1], dim = shape[2] / 3, head_dim = dim / heads;
  const Variable parts = reshape(qkv, {rows, 3, dim});
  auto normalised = [&](int64_t part, const Variable& weight, const Variable& bias) {
    Variable per_head = reshape(select_token(parts, part), {rows * heads, head_dim});
    return place_token(reshape(layer_norm(per_head, weight, bias, eps), {rows, dim}), 3, part);
  };
  Variable v = place_token(select_token(parts, 2), 3, 2);
  Variable out = add(add(normalised(0, q_weight, q_bias), normalised(1, k_weight, k_bias)), v);
  return reshape(out, shape);
}

}  // namespace vitune::autograd
