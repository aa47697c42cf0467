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

Transform eval_transform(const EvalTransformOptions& options) {
  VITUNE_CHECK(options.crop_pct > 0 && options.crop_pct <= 1, "eval transform: crop_pct ",
               options.crop_pct, " is not in (0, 1]");
  const int scale_size = int(std::floor(double(options.size) / options.crop_pct));
  const Normalization norm = normalization_preset(options.normalization);
  Transform transform;
  transform.then(std::make_shared<ResizeShorterSide>(scale_size, options.interpolation))
      .then(std::make_shared<CentreCrop>(options.size, options.size))
      .then(std::make_shared<ToChannels>(options.channels))
      .then(std::make_shared<Normalize>(norm.mean, norm.std));
  return transform;
}

Transform train_transform(const TrainTransformOptions& options) {
  const Normalization norm = normalization_preset(options.normalization);
  Transform transform;
  if (options.random_resized_crop) {
    transform.then(std::make_shared<RandomResizedCrop>(options.size, options.interpolation));
  } else {
    transform.then(std::make_shared<Resize>(options.size, options.size, options.interpolation));
  }
  if (options.horizontal_flip) transform.then(std::make_shared<RandomHorizontalFlip>(0.5));
  transform.then(std::make_shared<ToChannels>(options.channels))
      .then(std::make_shared<Normalize>(norm.mean, norm.std));
  return transform;
}

}  // namespace vitune::data
