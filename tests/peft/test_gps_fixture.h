// What the GPS tests share: the tiny ViT with the fixed head of gps_golden.safetensors
// installed (optionally converted to float64), the golden batches as a batch source, and
// the weights GPS scores.
#pragma once

#include <string>
#include <vector>

#include "nn/checkpoint.h"
#include "nn/safetensors.h"
#include "peft/gps_accumulate.h"
#include "test_util.h"

namespace vitune::testing {

inline const nn::SafetensorsFile& gps_golden() {
  static const nn::SafetensorsFile golden = nn::read_safetensors(data_path("gps_golden.safetensors"));
  return golden;
}

// The tiny ViT with the golden head, every parameter converted to `dtype`, on `device`.
inline std::unique_ptr<nn::VisionTransformer> gps_tiny_vit(DType dtype = DType::F32, Device device = Device::cpu()) {
  std::unique_ptr<nn::VisionTransformer> model = nn::load_vit(data_path("tiny_vit.safetensors"), Device::cpu()).model;
  model->head->weight.mutable_value() = gps_golden().at("head.weight").clone();
  model->head->bias.mutable_value() = gps_golden().at("head.bias").clone();
  for (nn::Parameter* p : model->parameters()) p->mutable_value() = p->value().to(dtype).clone();
  model->to(device);
  return model;
}

// The weight matrices of the backbone, the ones GPS scores: not norms, biases, tokens
// or the head.
inline std::vector<std::string> gps_selectable_weights(const nn::VisionTransformer& model) {
  std::vector<std::string> names;
  for (const nn::Parameter* p : model.parameters()) {
    const std::string& name = p->name();
    const bool weight = name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0;
    if (weight && name.find("norm") == std::string::npos && name.rfind("head.", 0) != 0) names.push_back(name);
  }
  return names;
}

// The golden batches in `dtype`, handed out one by one.
inline peft::GpsBatchSource gps_golden_batches(DType dtype = DType::F32) {
  std::vector<peft::GpsBatch> batches;
  for (int b = 0; b < 2; ++b) {
    const std::string prefix = "batch" + std::to_string(b);
    batches.push_back({gps_golden().at(prefix + ".images").to(dtype).clone(),
                       gps_golden().at(prefix + ".second_view").to(dtype).clone(),
                       gps_golden().at(prefix + ".labels").clone()});
  }
  auto next = std::make_shared<size_t>(0);
  return [batches, next](peft::GpsBatch& batch) {
    if (*next == batches.size()) return false;
    batch = batches[(*next)++];
    return true;
  };
}

}  // namespace vitune::testing
