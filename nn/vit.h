// VisionTransformer: patch embedding, cls token, learned position embedding, pre-norm
// blocks, final LayerNorm and a linear head on the cls token, exactly as timm's
// VisionTransformer(class_token=True, global_pool='token'); optionally with LoRA adapters
// on the blocks' linear layers for finetuning, merged away before saving.
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
  // images [B, C, H, W] f32 -> logits [B, num_classes] (the final-normed cls feature
  // [B, dim] when num_classes is 0). `observe` sees every block's intermediates.
  Variable forward(const Variable& images, const Observer& observe = {}) const;
  // The final-normed cls feature [B, dim], the input of the head.
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
  // std 0.02, cls_token normal with std 1e-6, biases 0, LayerNorms 1 and 0. Counter-based:
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
  // finetuning on a new task starts; num_classes 0 removes the head.
  void reset_head(int num_classes, uint64_t seed);

  PatchEmbed patch_embed;
  Parameter cls_token;  // [1, 1, D]
  Parameter pos_embed;  // [1, N + 1, D]
  std::vector<std::unique_ptr<Block>> blocks;
  LayerNorm norm;
  std::unique_ptr<Linear> head;  // null when num_classes == 0

 private:
  void collect_parameters();

  VitConfig config_;
  std::vector<Parameter*> parameters_;
};

}  // namespace vitune::nn
