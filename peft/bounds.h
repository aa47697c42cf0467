// Upper bounds on the plasticity of each ViT component, from its weights and from
// what the data showed of its inputs. Each holds for every pair of inputs that satisfy
// the stated condition, so it bounds the mean over such pairs too. docs/plasticity.md
// derives them. The weights may be on any device: they are copied to the host and the
// bounds are computed there.
#pragma once

#include <cstdint>
#include <vector>

#include "nn/layers.h"

namespace vitune::peft {

// max_x |GELU'(x)| = Phi(sqrt 2) + sqrt 2 phi(sqrt 2) ~ 1.1289 (exact erf GELU).
double gelu_lipschitz();

// LayerNorm over tokens whose sqrt(variance + eps) is at least `min_token_std`:
// |LN(X) - LN(Y)|_F <= max_k |gamma_k| / min_token_std * |X - Y|_F.
double layer_norm_bound(const nn::LayerNorm& norm, double min_token_std);

// A linear map x W^T + b: the spectral norm of W (its bias cancels).
double linear_bound(const Tensor& weight);

// Multi-head self-attention proj(attention(qkv(X))) on sequences of `tokens` tokens,
// each of Euclidean norm at most `max_token_norm`:
//   sum_h |W_O^h W_V^h|_2 * ( sqrt(n) + R^2 |A_h|_2 (1 + sqrt(n)) + R sqrt(n) |c_h| )
// with A_h = W_Q^h^T W_K^h / sqrt(d_h), c_h = W_K^h^T b_Q^h / sqrt(d_h), n = tokens,
// R = max_token_norm (weights in timm's [out, in] layout). NaN (no bound) for attention
// with q_norm / k_norm (timm's qk_norm): the bound is derived for raw queries and keys.
double attention_bound(const nn::MultiHeadAttention& attention, int64_t tokens, double max_token_norm);

// The spectral norms the attention bound is made of, per head.
struct AttentionHeadNorms {
  double value_output;  // |W_O^h W_V^h|_2
  double query_key;     // |A_h|_2
  double query_bias;    // |c_h|
};
std::vector<AttentionHeadNorms> attention_head_norms(const nn::MultiHeadAttention& attention);

}  // namespace vitune::peft
