// The committed tiny ViT (16x16 images, patch 4, dim 32, depth 2, 4 heads, 10 classes)
// with its batch of 4 images, as the PyTorch script in tools/ saved them, on a device
// (the cpu unless one is given).
#pragma once

#include "nn/checkpoint.h"
#include "nn/safetensors.h"
#include "test_util.h"

namespace vitune::testing {

struct TinyVit {
  explicit TinyVit(Device device = Device::cpu())
      : device(device), loaded(nn::load_vit(data_path("tiny_vit.safetensors"), device)) {}
  Device device;
  nn::LoadedVit loaded;
  nn::SafetensorsFile batch = nn::read_safetensors(data_path("tiny_images.safetensors"));
  nn::VisionTransformer& model() { return *loaded.model; }
  autograd::Variable images() const { return autograd::Variable(batch.at("images").clone().to(device)); }
  Tensor labels() const { return batch.at("labels").clone().to(device); }
};

}  // namespace vitune::testing
