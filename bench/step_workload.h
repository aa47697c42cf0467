// The workload the ViT step benchmarks time: a model with timm's initialisation, one
// batch of normal random images with uniform random labels, and PyTorch's SGD with
// momentum 0.9, all on one device (the host, or a CUDA device), finetuned in full, at a
// sparse selection or with LoRA adapters; and the Fashion-MNIST ViT configuration they
// start from.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "autograd/functions.h"
#include "autograd/variable.h"
#include "engine/device.h"
#include "engine/random.h"
#include "nn/lora.h"
#include "nn/optimizer.h"
#include "nn/vit.h"

namespace vitune::bench {

// The Fashion-MNIST ViT: 28x28 images, patch 4, 1 channel, dim 64, depth 4, heads 4,
// MLP ratio 4, 10 classes.
inline nn::VitConfig fmnist_config() {
  nn::VitConfig config;
  config.img_size = 28;
  config.patch = 4;
  config.in_chans = 1;
  config.dim = 64;
  config.depth = 4;
  config.heads = 4;
  config.mlp_ratio = 4.0;
  config.num_classes = 10;
  return config;
}

// What a step trains.
//   Full:   every parameter.
//   Masked: one entry per row of every linear weight (patch embedding included; entry
//           (j, (7 j) mod in) of row j) and the head in full; biases, LayerNorms,
//           cls_token and pos_embed frozen.
//   MaskedBiases: as Masked, and the biases of those linear layers in full (the mask
//           policy's default; LayerNorm biases stay frozen).
//   Lora:   rank-8 adapters on qkv, proj, fc1 and fc2 (alpha 8) and the head.
enum class Method { Full, Masked, MaskedBiases, Lora };

inline const char* method_name(Method method) {
  switch (method) {
    case Method::Full: return "full";
    case Method::Masked: return "masked";
    case Method::MaskedBiases: return "masked_biases";
    case Method::Lora: return "lora";
  }
  return "?";
}

// Sets the freeze states (and adapters) of `model` for `method`.
inline void prepare_method(nn::VisionTransformer& model, Method method) {
  if (method == Method::Full) return;
  if (method == Method::Lora) {
    nn::LoraOptions options;
    options.targets = {nn::LoraTarget::Qkv, nn::LoraTarget::Proj, nn::LoraTarget::Fc1, nn::LoraTarget::Fc2};
    model.add_lora(options);
    return;
  }
  // A linear layer's weight: a matrix (the patch embedding's [dim, C, p, p] is one too).
  auto linear_weight = [&](const std::string& name) {
    const nn::Parameter* p = model.find_parameter(name);
    return p != nullptr && p->value().ndim() >= 2;
  };
  auto ends_with = [](const std::string& name, const std::string& suffix) {
    return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  for (nn::Parameter* p : model.parameters()) {
    const std::string& name = p->name();
    const bool head = name.rfind("head", 0) == 0;
    const bool linear_bias =
        ends_with(name, ".bias") && linear_weight(name.substr(0, name.size() - 5) + ".weight");
    if (head || (linear_bias && method == Method::MaskedBiases)) {
      p->train();
    } else if (ends_with(name, ".weight") && linear_weight(name)) {
      const int64_t rows = p->shape()[0], cols = p->numel() / rows;
      std::vector<int64_t> indices(static_cast<size_t>(rows));
      for (int64_t j = 0; j < rows; ++j) indices[size_t(j)] = j * cols + (7 * j) % cols;
      p->train_entries(Tensor::from_vector<int64_t>({rows}, indices, Device::cpu()).to(p->value().device()));
    } else {
      p->freeze();
    }
  }
}

struct StepWorkload {
  // The model, images and labels are made on `device` from the same seeds whatever the
  // device (random values are drawn on the host); the optimizer's state is made there.
  StepWorkload(const nn::VitConfig& config, int64_t batch, Device device, Method method = Method::Full)
      : model(config, device) {
    model.init_weights(0);
    prepare_method(model, method);
    Tensor pixels({batch, config.in_chans, config.img_size, config.img_size}, DType::F32, Device::cpu());
    fill_normal(pixels, 1, 0, 0.0, 1.0);
    images = autograd::Variable(pixels.to(device));
    Tensor host_labels({batch}, DType::I64, Device::cpu());
    int64_t* label = host_labels.data<int64_t>();
    for (int64_t i = 0; i < batch; ++i) {
      label[i] = int64_t(uniform01(1, 1, uint64_t(i)) * float(config.num_classes)) % config.num_classes;
    }
    labels = host_labels.to(device);
    nn::SgdOptions options;
    options.lr = 0.01;
    options.momentum = 0.9;
    optimizer = std::make_unique<nn::Sgd>(model.parameters(), options);
  }

  // The forward pass and cross-entropy loss of the batch, on the tape.
  autograd::Variable loss() { return autograd::cross_entropy(model.forward(images), labels); }

  // The backward pass of `loss`, one SGD step, and zero_grad.
  void update(const autograd::Variable& loss) {
    autograd::backward(loss);
    optimizer->step();
    optimizer->zero_grad();
  }

  // The logits of the batch, computed without the tape.
  autograd::Variable logits_without_tape() {
    autograd::NoGradGuard no_grad;
    return model.forward(images);
  }

  nn::VisionTransformer model;
  autograd::Variable images;
  Tensor labels;
  std::unique_ptr<nn::Sgd> optimizer;
};

}  // namespace vitune::bench
