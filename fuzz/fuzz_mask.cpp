// Fuzzes selection-mask files: load_mask (format, metadata, index tensors sorted,
// unique and non-negative) and, for a mask that loads, apply_mask on a small model
// (backbone hash, names, every index against its tensor's size).
#include <cstdint>
#include <cstdlib>

#include "engine/error.h"
#include "fuzz/temp_file.h"
#include "fuzz/tiny_model.h"
#include "peft/mask_file.h"
#include "peft/model_hash.h"

namespace {

// A mask for tiny_model(): three entries of qkv and one of fc1, the head in full.
void write_seed(const std::string& folder) {
  vitune::peft::SelectionMask mask;
  mask.selected.emplace_back("blocks.0.attn.qkv.weight", vitune::Tensor::from_vector<int64_t>({3}, {0, 3, 5}, vitune::Device::cpu()));
  mask.selected.emplace_back("blocks.0.mlp.fc1.weight", vitune::Tensor::from_vector<int64_t>({1}, {1}, vitune::Device::cpu()));
  mask.fully_trainable = {"head.weight", "head.bias"};
  mask.metadata = {{"method", "gdfps"}, {"k", "1"}, {"model_hash", vitune::peft::backbone_hash(vitune::fuzz::tiny_model())}};
  vitune::peft::save_mask(folder + "/tiny_model_mask", mask);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string folder = vitune::fuzz::seed_folder();
  if (!folder.empty()) {
    write_seed(folder);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = vitune::fuzz::write_temp_file("mask.safetensors", data, size);
  try {
    vitune::peft::SelectionMask mask = vitune::peft::load_mask(path);
    vitune::peft::apply_mask(vitune::fuzz::tiny_model(), mask, path);
  } catch (const vitune::Error&) {
  }
  return 0;
}
