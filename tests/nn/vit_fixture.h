// The committed tiny ViT (16x16 images, patch 4, dim 32, depth 2, 4 heads, 10 classes)
// with its batch of 4 images, as the PyTorch script in tools/ saved them.
#pragma once

#include "nn/checkpoint.h"
#include "nn/safetensors.h"
#include "test_util.h"

namespace vitune::testing {

struct TinyVit {
  nn::LoadedVit loaded = nn::load_vit(data_path("tiny_vit.safetensors"), Device::cpu());
  nn::SafetensorsFile batch = nn::read_safetensors(data_path("tiny_images.safetensors"));
  nn::VisionTransformer& model() { return *loaded.model; }
  autograd::Variable images() const { return autograd::Variable(batch.at("images").clone()); }
  Tensor labels() const { return batch.at("labels").clone(); }
};

}  // namespace vitune::testing
