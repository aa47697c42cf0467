// For the mask and anchor fuzz targets: one small ViT (8x8 grey images, patch 4, width
// 8, one block, 3 classes) with fixed weights, so that its backbone hash is the same in
// every run and seed files written for it pass the hash check. With the environment
// variable VITUNE_FUZZ_WRITE_SEEDS set to a folder, a target writes its seed files
// there and exits (see fuzz/make_corpus.py).
#pragma once

#include <cstdlib>
#include <string>

#include "nn/vit.h"

namespace vitune::fuzz {

inline nn::VisionTransformer& tiny_model() {
  static nn::VisionTransformer* model = [] {
    nn::VitConfig config;
    config.img_size = 8;
    config.patch = 4;
    config.in_chans = 1;
    config.dim = 8;
    config.depth = 1;
    config.heads = 2;
    config.num_classes = 3;
    auto* vit = new nn::VisionTransformer(config, Device::cpu());
    vit->init_weights(1);
    return vit;
  }();
  return *model;
}

// The folder to write seeds to, or "" when the target should fuzz.
inline std::string seed_folder() {
  const char* folder = std::getenv("VITUNE_FUZZ_WRITE_SEEDS");
  return folder ? folder : "";
}

}  // namespace vitune::fuzz
