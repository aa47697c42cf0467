// Normalisation presets and the standard evaluation and training pipelines.
#include "data/transform_presets.h"

#include <cmath>
#include <memory>

#include "data/transform_steps.h"
#include "engine/error.h"

namespace vitune::data {

Normalization normalization_preset(const std::string& name) {
  if (name == "imagenet") return {{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}};
  if (name == "half") return {{0.5f}, {0.5f}};
  throw Error(cat("normalisation preset \"", name, "\" is unknown (expected imagenet or half)"));
}

const char* crop_mode_name(CropMode mode) { return mode == CropMode::Centre ? "center" : "squash"; }

Transform eval_transform(const EvalTransformOptions& options) {
  const Preprocessing& p = options.preprocessing;
  VITUNE_CHECK(p.crop_pct > 0 && p.crop_pct <= 1, "eval transform: crop_pct ", p.crop_pct, " is not in (0, 1]");
  const int scale_size = int(std::floor(double(options.size) / p.crop_pct));
  const Normalization& norm = p.normalization;
  Transform transform;
  if (p.crop_mode == CropMode::Squash) {
    transform.then(std::make_shared<Resize>(scale_size, scale_size, p.interpolation));
  } else {
    transform.then(std::make_shared<ResizeShorterSide>(scale_size, p.interpolation));
  }
  transform.then(std::make_shared<CentreCrop>(options.size, options.size))
      .then(std::make_shared<ToChannels>(options.channels))
      .then(std::make_shared<Normalize>(norm.mean, norm.std));
  return transform;
}

Transform train_transform(const TrainTransformOptions& options) {
  const Normalization& norm = options.preprocessing.normalization;
  const Interpolation interpolation = options.preprocessing.interpolation;
  Transform transform;
  if (options.random_resized_crop) {
    transform.then(std::make_shared<RandomResizedCrop>(options.size, interpolation));
  } else {
    transform.then(std::make_shared<Resize>(options.size, options.size, interpolation));
  }
  if (options.horizontal_flip) transform.then(std::make_shared<RandomHorizontalFlip>(0.5));
  transform.then(std::make_shared<ToChannels>(options.channels))
      .then(std::make_shared<Normalize>(norm.mean, norm.std));
  return transform;
}

}  // namespace vitune::data
