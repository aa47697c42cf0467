// The workload the ViT step benchmarks time: a model with timm's initialisation, one
// batch of normal random images with uniform random labels, and PyTorch's SGD with
// momentum 0.9, all on one device (the host, or a CUDA device); and the Fashion-MNIST
// ViT configuration they start from.
#pragma once

#include <cstdint>
#include <memory>

#include "autograd/functions.h"
#include "autograd/variable.h"
#include "engine/device.h"
#include "engine/random.h"
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

struct StepWorkload {
  // The model, images and labels are made on `device` from the same seeds whatever the
  // device (random values are drawn on the host); the optimizer's state is made there.
  StepWorkload(const nn::VitConfig& config, int64_t batch, Device device) : model(config, device) {
    model.init_weights(0);
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
