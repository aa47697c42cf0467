// The shape of a Vision Transformer, as timm's VisionTransformer constructor arguments
// name it (class_token, reg_tokens, no_embed_class, global_pool, fc_norm, qkv_bias,
// qk_norm, init_values, pre_norm, act), plus DeiT's distillation token and the bias-free final
// projection of CLIP towers (head_bias false).
#pragma once

#include <string>

namespace vitune::nn {

struct VitConfig {
  int img_size = 224;
  int patch = 16;
  int in_chans = 3;
  int dim = 768;
  int depth = 12;
  int heads = 12;
  double mlp_ratio = 4.0;
  int num_classes = 1000;  // 0: no head; the model returns the pooled feature
  double ln_eps = 1e-6;
  bool class_token = true;
  int reg_tokens = 0;            // DINOv2-style registers after the class token
  bool dist_token = false;       // DeiT distilled: a second head on token 1, logits averaged
  bool no_embed_class = false;   // pos_embed covers the patches only (added before the prefix)
  // "token" (token 0), "avg" (mean of the patch tokens) or "none" (timm's global_pool='':
  // every token is returned, the head applied to each)
  std::string global_pool = "token";
  bool fc_norm = false;          // LayerNorm after pooling (on every token with "none") instead of `norm`
  bool qkv_bias = true;
  bool qk_norm = false;          // LayerNorm of each head's q and k (attn.q_norm, attn.k_norm)
  double init_values = 0.0;      // LayerScale ls1/ls2 (with this initial value) when > 0
  bool pre_norm = false;         // norm_pre after the position embedding; patch conv without bias
  std::string act = "gelu";      // "gelu" (exact erf) or "quick_gelu" (x sigmoid(1.702 x))
  bool head_bias = true;         // false: the head is a projection without bias (CLIP)

  int grid() const { return img_size / patch; }
  int num_patches() const { return grid() * grid(); }
  int prefix_tokens() const { return int(class_token) + reg_tokens + int(dist_token); }
  int tokens() const { return num_patches() + prefix_tokens(); }
  int pos_tokens() const { return no_embed_class ? num_patches() : tokens(); }
  int hidden() const;  // dim * mlp_ratio, exact
  int head_dim() const { return dim / heads; }

  // Throws vitune::Error naming `source` when a field is out of range or inconsistent.
  void validate(const std::string& source) const;
  // JSON object with exactly the field names above.
  std::string to_json() const;
  // Reads the fields present in a JSON object over `base`; `source` names it in errors.
  static VitConfig from_json(const std::string& text, const std::string& source, VitConfig base);
};

}  // namespace vitune::nn
