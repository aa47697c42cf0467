// Fuzzes GD-FPS anchor files: load_anchor against a small model (format, backbone
// hash, every measured layer present as finite, non-negative f64 [in_features], nothing
// else).
#include <cstdint>
#include <cstdlib>

#include "engine/error.h"
#include "fuzz/temp_file.h"
#include "fuzz/tiny_model.h"
#include "peft/activation_stats.h"
#include "peft/anchor.h"
#include "peft/model_hash.h"

namespace {

// The anchor of tiny_model() measured on two fixed images.
void write_seed(const std::string& folder) {
  std::vector<float> pixels(2 * 64);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = float(i % 17) / 17.0f - 0.5f;
  vitune::peft::ActivationStats stats(vitune::fuzz::tiny_model());
  stats.add_batch(vitune::Tensor::from_vector<float>({2, 1, 8, 8}, pixels, vitune::Device::cpu()));
  vitune::peft::save_anchor(folder + "/tiny_model_anchor", stats,
                            vitune::peft::backbone_hash(vitune::fuzz::tiny_model()), "idx:images,labels");
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
  const std::string path = vitune::fuzz::write_temp_file("anchor.safetensors", data, size);
  try {
    vitune::peft::load_anchor(path, vitune::fuzz::tiny_model());
  } catch (const vitune::Error&) {
  }
  return 0;
}
