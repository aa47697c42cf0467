// The small ViT configurations the method tests build models from: 8x8 images in 4x4
// patches (4 patches and the cls token), 2 heads, 3 classes.
#pragma once

#include "nn/vit_config.h"

namespace vitune::testing {

inline nn::VitConfig small_vit_config(int in_chans, int dim, int depth) {
  nn::VitConfig c;
  c.img_size = 8;
  c.patch = 4;
  c.in_chans = in_chans;
  c.dim = dim;
  c.depth = depth;
  c.heads = 2;
  c.num_classes = 3;
  return c;
}

}  // namespace vitune::testing
