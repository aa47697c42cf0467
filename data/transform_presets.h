// The two pipelines models are trained and evaluated with, as timm builds them, and
// the normalisation presets.
#pragma once

#include <string>
#include <vector>

#include "data/resample.h"
#include "data/transform.h"

namespace vitune::data {

struct Normalization {
  std::vector<float> mean;
  std::vector<float> std;
};

// "imagenet": mean (0.485, 0.456, 0.406), std (0.229, 0.224, 0.225); "half": 0.5 and
// 0.5. Throws naming the preset and the known ones otherwise.
Normalization normalization_preset(const std::string& name);

struct EvalTransformOptions {
  int size = 224;         // output height and width
  int channels = 3;       // the model's input channels
  double crop_pct = 1.0;  // resize the shorter side to floor(size / crop_pct), crop size
  Interpolation interpolation = Interpolation::Bicubic;
  std::string normalization = "imagenet";
};
// resize_shorter(floor(size / crop_pct)) | centre_crop(size) | to_channels | normalise.
Transform eval_transform(const EvalTransformOptions& options);

struct TrainTransformOptions {
  int size = 224;
  int channels = 3;
  Interpolation interpolation = Interpolation::Bicubic;
  std::string normalization = "imagenet";
  bool random_resized_crop = true;  // else resize to size x size
  bool horizontal_flip = true;      // p = 0.5
};
// random_resized_crop(size) | horizontal_flip | to_channels | normalise.
Transform train_transform(const TrainTransformOptions& options);

}  // namespace vitune::data
