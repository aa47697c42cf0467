// A selection mask: for each selected weight tensor, the sorted flat indices of the
// entries to finetune; the tensors the selection policy trains in full (biases, the
// head); and metadata (method, K, model hash, data spec, seed, policy). Stored as
// safetensors: one i64 tensor of indices per selected weight, the rest in
// "__metadata__". Written atomically; read with every index checked.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>
#include "engine/tensor.h"
#include "nn/vit.h"

namespace vitune::peft {

struct SelectionMask {
  // In the model's parameter order: tensor name -> sorted, unique flat indices (i64).
  std::vector<std::pair<std::string, Tensor>> selected;
  // Parameters trained at every entry beside the selected ones (e.g. biases, "head.*").
  std::vector<std::string> fully_trainable;
  // method, k, model_hash, data, seed, policy, ...
  std::map<std::string, std::string> metadata;

  int64_t selected_count() const;
};

void save_mask(const std::string& path, const SelectionMask& mask);
// Throws vitune::Error naming the file and the tensor for unsorted, duplicate or
// negative indices, a wrong dtype or rank, or missing metadata.
SelectionMask load_mask(const std::string& path);

// Sets every parameter's freeze state from the mask: selected tensors train at their
// entries, fully trainable ones in full, all others are frozen. Checks the model's
// backbone hash against the mask's, every name, and every index against the tensor's
// size (errors name `source`, the mask file). The indices are checked on the host and
// go to each parameter's device with its freeze state.
void apply_mask(nn::VisionTransformer& model, const SelectionMask& mask, const std::string& source);

}  // namespace vitune::peft
