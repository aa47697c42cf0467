// The component taxonomy of a ViT's parameters, as the plasticity paper cuts a model:
// emb (patch embedding, prefix tokens, position embedding, norm_pre), ln1, mha (with
// LayerScale ls1, and qk_norm's attn.q_norm / attn.k_norm: LayerNorms inside the
// attention, not the paper's LN1 / LN2), ln2, fc1, fc2 (with ls2) per block, norm (the
// final LayerNorm or fc_norm) and head (with head_dist).
#pragma once

#include <string>
#include <vector>

namespace vitune::nn {

enum class Component { Emb, LN1, MHA, LN2, FC1, FC2, Norm, Head };

// All components in model order.
const std::vector<Component>& all_components();
// "emb", "ln1", "mha", "ln2", "fc1", "fc2", "norm", "head".
const char* component_name(Component component);
// The component a timm parameter name belongs to; throws vitune::Error for names
// outside the taxonomy.
Component component_of(const std::string& parameter_name);
// The block index of a parameter name ("blocks.7.mlp.fc1.weight" -> 7), -1 outside blocks.
int block_of(const std::string& parameter_name);

}  // namespace vitune::nn
