// Mapping timm parameter names to components.
#include "nn/components.h"

#include <cstdlib>

#include "engine/error.h"

namespace vitune::nn {

const std::vector<Component>& all_components() {
  static const std::vector<Component> all = {Component::Emb, Component::LN1, Component::MHA,
                                             Component::LN2, Component::FC1, Component::FC2,
                                             Component::Norm, Component::Head};
  return all;
}

const char* component_name(Component component) {
  switch (component) {
    case Component::Emb: return "emb";
    case Component::LN1: return "ln1";
    case Component::MHA: return "mha";
    case Component::LN2: return "ln2";
    case Component::FC1: return "fc1";
    case Component::FC2: return "fc2";
    case Component::Norm: return "norm";
    case Component::Head: return "head";
  }
  return "?";
}

int block_of(const std::string& name) {
  if (name.rfind("blocks.", 0) != 0) return -1;
  return std::atoi(name.c_str() + 7);
}

Component component_of(const std::string& name) {
  auto starts = [&](const char* prefix) { return name.rfind(prefix, 0) == 0; };
  if (starts("patch_embed.") || starts("norm_pre.") || name == "cls_token" || name == "reg_token" ||
      name == "dist_token" || name == "pos_embed") {
    return Component::Emb;
  }
  if (starts("norm.") || starts("fc_norm.")) return Component::Norm;
  if (starts("head.") || starts("head_dist.")) return Component::Head;
  if (block_of(name) >= 0) {
    std::string rest = name.substr(name.find('.', 7) + 1);
    auto in = [&](const char* prefix) { return rest.rfind(prefix, 0) == 0; };
    if (in("norm1.")) return Component::LN1;
    if (in("attn.") || in("ls1.")) return Component::MHA;
    if (in("norm2.")) return Component::LN2;
    if (in("mlp.fc1.")) return Component::FC1;
    if (in("mlp.fc2.") || in("ls2.")) return Component::FC2;
  }
  throw Error(cat("parameter '", name, "' belongs to no ViT component"));
}

}  // namespace vitune::nn
