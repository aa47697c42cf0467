// The differentiable functions of the tape. Each is one fused forward and one
// hand-written backward (in its own .cpp, with the derivation in a comment); a
// backward computes only the input gradients that some input actually needs.
#pragma once

#include "autograd/variable.h"

namespace vitune::autograd {

// y = x W^T + b over the last dimension of x. weight [out, in]; bias [out] or undefined.
Variable linear(const Variable& x, const Variable& weight, const Variable& bias);
// A linear layer with a LoRA adapter, in one function: y = x W^T + b + scaling (x A^T) B^T
// with A [r, in] and B [out, r]. One output tensor; backward keeps only x and x A^T.
Variable lora_linear(const Variable& x, const Variable& weight, const Variable& bias, const Variable& lora_a,
                     const Variable& lora_b, double scaling);
// LayerNorm over the last dimension with affine weight and bias [d].
Variable layer_norm(const Variable& x, const Variable& weight, const Variable& bias, double eps);
// Exact erf GELU.
Variable gelu(const Variable& x);
// QuickGELU (OpenAI CLIP): x * sigmoid(1.702 x).
Variable quick_gelu(const Variable& x);
// Softmax over the last dimension.
Variable softmax(const Variable& x);
// Multi-head self-attention core on timm's fused qkv [B, N, 3D] -> context [B, N, D].
Variable attention(const Variable& qkv, int heads);
// timm's qk_norm on the fused qkv [B, N, 3D]: LayerNorm over each head's d_h = D/heads
// entries of q (weight and bias [d_h], shared by the heads) and of k, v unchanged; the
// result has qkv's layout. Composed of the functions here (its backward is theirs).
Variable qk_layer_norm(const Variable& qkv, int heads, const Variable& q_weight, const Variable& q_bias,
                       const Variable& k_weight, const Variable& k_bias, double eps);
// Mean cross-entropy with label smoothing; labels i64 [B]. Result has shape [1].
Variable cross_entropy(const Variable& logits, const Tensor& labels, double smoothing = 0.0);

// a + b, same shapes.
Variable add(const Variable& a, const Variable& b);
// x + p where p's shape is x's with the leading (batch) dimension set to 1.
Variable add_broadcast_batch(const Variable& x, const Variable& p);
// factor * x.
Variable scale(const Variable& x, double factor);
// x * gamma with gamma [D] scaling the last dimension of x (LayerScale).
Variable mul_channels(const Variable& x, const Variable& gamma);
// a @ b over the last two dimensions: [M,K] x [K,N] or [S,M,K] x [S,K,N].
Variable matmul(const Variable& a, const Variable& b);

// Same values, new shape.
Variable reshape(const Variable& x, const Shape& shape);
// images [B, C, H, W] -> patch vectors [B, (H/p)(W/p), C p p].
Variable patchify(const Variable& images, int patch);
// [1, 1, D] token before each sequence of x [B, N, D] -> [B, N+1, D].
Variable prepend_token(const Variable& token, const Variable& x);
// Token `index` of every sequence: x [B, N, D] -> [B, D].
Variable select_token(const Variable& x, int64_t index);
// y [B, D] at token `index` of zeros [B, tokens, D] (the adjoint of select_token).
Variable place_token(const Variable& y, int64_t tokens, int64_t index);
// The mean of tokens [first, N) of every sequence: x [B, N, D] -> [B, D].
Variable mean_tokens(const Variable& x, int64_t first);

// The supervised contrastive loss (SupCon, every row an anchor) of features [N, D],
// typically two views of B images stacked [view1; view2] (N = 2B), with labels i64 [N].
// Each row is L2-normalised first; for anchor i with positives P(i) = {p != i : label_p =
// label_i}, L_i = -1/|P(i)| sum_{p in P(i)} log(exp(z_i.z_p/T) / sum_{a != i} exp(z_i.z_a/T)),
// and the result [1] is the mean over anchors. A row with no positive is an error.
Variable supervised_contrastive(const Variable& features, const Tensor& labels, double temperature);

}  // namespace vitune::autograd
