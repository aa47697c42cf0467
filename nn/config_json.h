// The config.json a Hugging Face or timm hub folder keeps beside its weights: what the
// tensors cannot tell (the head count, activation, LayerNorm epsilon, pooling).
//   Hugging Face: num_attention_heads, hidden_act, layer_norm_eps, image_size, patch_size
//                 (one integer or a square [n, n]; under vision_config for a whole CLIPModel)
//   timm:         global_pool; model_args.num_heads, .global_pool, .act_layer, .fc_norm
#pragma once

#include <string>

namespace vitune::nn {

struct ConfigJson {
  std::string path;         // empty: no config.json beside the weights
  int heads = 0;            // 0: not given
  std::string act;          // "gelu", "quick_gelu" or empty
  double ln_eps = 0.0;      // 0: not given
  int image_size = 0;
  int patch_size = 0;
  std::string global_pool;  // "token", "avg", "none" (timm's '') or empty
};

// Reads config.json in the folder of `weights_path` when there is one. A field of the
// wrong type, a non-square size or an activation other than gelu / quick_gelu is an
// error naming the file and the field.
ConfigJson read_config_json_beside(const std::string& weights_path);

}  // namespace vitune::nn
