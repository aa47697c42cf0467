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
};

}  // namespace vitune::cli
