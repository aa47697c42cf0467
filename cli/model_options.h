// The flags every command that loads a model shares: the checkpoint path and what its
// tensors cannot tell (--heads, --ln-eps, --global-pool, --act) and --img-size.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "nn/checkpoint.h"

namespace vitune::cli {

struct ModelOptions {
  std::string path;
  nn::LoadOptions load;

  // Adds --heads, --ln-eps, --global-pool, --act and --img-size to `command`; the model path is added by the caller
  // (positional for info, --model for the rest).
  void add_to(CLI::App& command);
  // The checkpoint, built on `device`.
  nn::LoadedVit load_model(Device device) const { return nn::load_vit(path, device, load); }
  // The same for `command`, which needs one prediction per image: a model without
  // pooling is refused (require_pooled).
  nn::LoadedVit load_pooled_model(Device device, const std::string& command) const;
};

// Refuses a model without pooling (global_pool "none": an output per token) for
// `command`, naming --global-pool token|avg, which sets the pooling as timm's
// reset_classifier(num_classes, global_pool=...) does.
void require_pooled(const nn::LoadedVit& loaded, const std::string& command);

}  // namespace vitune::cli
