// The prior anchor of GD-FPS: E_{x~D_pre}|a_k| for every input feature of every
// measured layer (see activation_stats.h), computed once on pretraining data and
// shared by every downstream task. Stored as safetensors, one f64 tensor [in_features]
// per layer named by the weight it serves ("blocks.0.attn.qkv.weight"), with metadata:
// format and format_version, model_hash (the backbone hash), data (the spec), images,
// tokens_per_image and patches_per_image. Written atomically.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/tensor.h"
#include "nn/vit.h"
#include "peft/activation_stats.h"

namespace vitune::peft {

constexpr const char* kAnchorFormat = "vitune-gdfps-anchor";
constexpr const char* kAnchorFormatVersion = "1";

struct Anchor {
  std::vector<std::pair<std::string, Tensor>> means;  // weight name -> f64 [in_features]
  std::map<std::string, std::string> metadata;
  std::string path;

  // The mean |a| of the layer whose weight is `weight_name`; throws naming the file.
  const Tensor& at(const std::string& weight_name) const;
};

void save_anchor(const std::string& path, const ActivationStats& stats, const std::string& model_hash,
                 const std::string& data_spec);

// Reads an anchor and checks it against `model`: the format, the backbone hash (a
// mismatch names both hashes and the file), every measured layer present as f64
// [in_features] with finite, non-negative values, and nothing else.
Anchor load_anchor(const std::string& path, const nn::VisionTransformer& model);

}  // namespace vitune::peft
