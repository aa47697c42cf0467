// VisionTransformer: patch embedding, prefix tokens (class token, registers, DeiT's
// distillation token), learned position embedding, optional norm_pre, pre-norm blocks
// (optional LayerScale, gelu or quick_gelu), final LayerNorm, pooling of token 0 or the
// mean of the patch tokens or none (every token; then fc_norm instead of the final norm
// when the config has it) and a linear head, exactly as timm's VisionTransformer and
// VisionTransformerDistilled compute them; optionally with LoRA adapters on the blocks'
// linear layers for finetuning, merged away before saving.
#pragma once

#include <memory>
#include <vector>

#include "nn/layers.h"
#include "nn/vit_config.h"

namespace vitune::nn {

class VisionTransformer {
 public:
  // Parameters on `device`, zero (LayerNorm weights one) until init_weights or a load.
  VisionTransformer(const VitConfig& config, Device device);

  const VitConfig& config() const { return config_; }
  // images [B, C, H, W] f32 -> logits [B, num_classes] (the pooled feature [B, dim]
  // when num_classes is 0). With a distillation token the logits are the mean of head
  // on token 0 and head_dist on token 1, as timm computes them at evaluation. Without
  // pooling (global_pool "none") every token's: [B, tokens, num_classes] (or
  // [B, tokens, dim] without a head), as timm's forward_head with global_pool=''.
  // `observe` sees every block's intermediates.
  Variable forward(const Variable& images, const Observer& observe = {}) const;
  // The pooled feature [B, dim], the input of the head (with a distillation token, the
  // mean of tokens 0 and 1, timm's pre_logits; without pooling [B, tokens, dim]).
  Variable features(const Variable& images, const Observer& observe = {}) const;

  // All parameters in timm's state-dict order (an adapter's lora_A and lora_B follow its
  // layer's bias).
  const std::vector<Parameter*>& parameters() const { return parameters_; }
  // The parameter with this timm name; the error lists the valid names' pattern.
  Parameter& parameter(const std::string& name) const;
  Parameter* find_parameter(const std::string& name) const;
  int64_t parameter_count() const;

  // Moves every parameter (values and mask indices) to `device`; gradients are dropped.
  // Parameters made afterwards (reset_head, add_lora) are made on the model's device.
  void to(Device device);
  // The device of the parameters (of the first one: to() keeps them together).
  Device device() const;

  // timm's initialisation: linear and patch weights and pos_embed truncated normal with
  // std 0.02, cls_token and reg_token normal with std 1e-6, biases 0, LayerNorms 1 and 0,
  // LayerScale gammas init_values. Counter-based:
  // parameter i draws from stream i of `seed`.
  void init_weights(uint64_t seed);
  // Attaches a LoRA adapter to the targeted linear layers of every block (A drawn from
  // options.seed, stream 2^21 + 4 * block + target) and sets the freeze states for
  // LoRA finetuning: the adapters and the head train, every other parameter is frozen.
  void add_lora(const LoraOptions& options);
  // Folds every adapter into its weight and removes it: a plain ViT again, with the
  // same function (up to float rounding). The other freeze states are kept.
  void merge_lora();
  bool has_lora() const;

  // A fresh head for `num_classes` classes (truncated normal std 0.02, zero bias), as
  // finetuning on a new task starts; num_classes 0 removes the head. A distilled model's
  // head_dist is replaced the same way (stream 2^20 + 1).
  void reset_head(int num_classes, uint64_t seed);

  // Parameters the config does without hold undefined tensors; modules it does without
  // are null.
  PatchEmbed patch_embed;
  Parameter cls_token;   // [1, 1, D]
  Parameter reg_token;   // [1, reg_tokens, D]
  Parameter dist_token;  // [1, 1, D]
  Parameter pos_embed;   // [1, pos_tokens, D]
  std::unique_ptr<LayerNorm> norm_pre;
  std::vector<std::unique_ptr<Block>> blocks;
  std::unique_ptr<LayerNorm> norm;     // null with fc_norm
  std::unique_ptr<LayerNorm> fc_norm;  // after pooling
  std::unique_ptr<Linear> head;        // null when num_classes == 0
  std::unique_ptr<Linear> head_dist;   // DeiT distilled

 private:
  void collect_parameters();
  void make_heads(int num_classes, Device device);
  // Patch tokens with the prefix tokens and position embedding, through the blocks and
  // the final norm: [B, tokens, D].
  Variable encode(const Variable& images, const Observer& observe) const;

  VitConfig config_;
  std::vector<Parameter*> parameters_;
};

}  // namespace vitune::nn
