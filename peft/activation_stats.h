// The statistic GD-FPS is built on: for every linear map of a ViT (the patch
// embedding, read as a linear map on flattened patches, and qkv, proj, fc1, fc2 of
// each block), the mean over all tokens and images of |a_k|, the absolute value of
// each input feature k. Measured forward only, with no tape: each observed activation
// is reduced to per-feature sums as it passes and then dropped.
//
// Determinism: each image's tokens are summed per feature in double, in token order,
// and the images are then added in the order they arrive (ops::token_abs_sums_into).
// The same images in the same order give the same bits whatever the batch split and the
// thread count. Everything runs on the model's device: the forward pass, the reduction
// of each observed activation and the running sums, which reach the host only in
// means(); both backends sum in the same order, so the same activations give the same
// bits on every device.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "data/loader.h"
#include "engine/tensor.h"
#include "nn/vit.h"

namespace vitune::peft {

struct MeasuredLayer {
  std::string weight_name;   // "blocks.0.attn.qkv.weight", "patch_embed.proj.weight"
  std::string input_name;    // the observer name of its input ("blocks.0.norm1_out"), "patches"
  int64_t in_features = 0;   // columns of the weight read as [out, in]
  int64_t tokens_per_image = 0;
};

// The measured layers in model order: the patch embedding, then qkv, proj, fc1, fc2 of
// each block.
std::vector<MeasuredLayer> measured_layers(const nn::VisionTransformer& model);

class ActivationStats {
 public:
  explicit ActivationStats(const nn::VisionTransformer& model);

  // Runs the model forward (no tape) on images [B, C, H, W] (on any device: they are
  // moved to the model's) and adds every image's per-feature sums of |a|, in batch order.
  void add_batch(const Tensor& images);

  const std::vector<MeasuredLayer>& layers() const { return layers_; }
  Device device() const { return model_.device(); }
  int64_t images() const { return images_; }
  // Per layer, in layers() order: the weight name and the mean |a_k| as f64 [in_features]
  // (the sum over images and tokens divided by images * tokens_per_image).
  std::vector<std::pair<std::string, Tensor>> means() const;

 private:
  void add_activation(size_t layer, const Tensor& value);

  const nn::VisionTransformer& model_;
  std::vector<MeasuredLayer> layers_;
  std::map<std::string, size_t> layer_of_input_;
  std::vector<Tensor> sums_;  // per layer: f64 [in_features] on the model's device
  int64_t images_ = 0;
};

// Streams every batch of one epoch of `loader` (which must not shuffle) through
// `stats`; `on_batch(images_done)` is called after each batch. The next batch's copy to
// the device is started before the current one is measured (engine/upload.h); the
// device's work is complete when this returns.
void measure_activations(ActivationStats& stats, data::Loader& loader,
                         const std::function<void(int64_t)>& on_batch = {});

}  // namespace vitune::peft
