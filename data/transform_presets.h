// The two pipelines models are trained and evaluated with, as timm builds them, what a
// model expects of its input besides the size and channels (its preprocessing), and the
// normalisation presets.
#pragma once

#include <string>
#include <vector>

#include "data/resample.h"
#include "data/transform.h"

namespace vitune::data {

struct Normalization {
  std::vector<float> mean{0.5f};
  std::vector<float> std{0.5f};
};

// "imagenet": mean (0.485, 0.456, 0.406), std (0.229, 0.224, 0.225); "half": 0.5 and
// 0.5. Throws naming the preset and the known ones otherwise.
Normalization normalization_preset(const std::string& name);

// How the evaluation pipeline brings an image to the model's size before the centre
// crop: timm's crop_mode "center" (the shorter side, keeping the aspect ratio) or
// "squash" (both sides, as Hugging Face's processors with a height and width size).
enum class CropMode { Centre, Squash };
const char* crop_mode_name(CropMode mode);

// What a model expects of its input besides the size and channels, as timm's
// pretrained_cfg says it. The defaults are vitune's own: 0.5 / 0.5, no margin, bicubic.
struct Preprocessing {
  Normalization normalization;
  double crop_pct = 1.0;  // the crop is this fraction of the resized image
  CropMode crop_mode = CropMode::Centre;
  Interpolation interpolation = Interpolation::Bicubic;
};

struct EvalTransformOptions {
  int size = 224;    // output height and width
  int channels = 3;  // the model's input channels
  Preprocessing preprocessing;
};
// resize_shorter(floor(size / crop_pct)) (or resize to that square with CropMode::Squash)
// | centre_crop(size) | to_channels | normalise.
Transform eval_transform(const EvalTransformOptions& options);

struct TrainTransformOptions {
  int size = 224;
  int channels = 3;
  Preprocessing preprocessing;  // its interpolation and normalisation
  bool random_resized_crop = true;  // else resize to size x size
  bool horizontal_flip = true;      // p = 0.5
};
// random_resized_crop(size) | horizontal_flip | to_channels | normalise.
Transform train_transform(const TrainTransformOptions& options);

}  // namespace vitune::data
