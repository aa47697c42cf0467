// A model's preprocessing (mean, std, crop percentage, crop mode, interpolation) read
// from what its checkpoint carries, field by field from the first place that has it:
//   1. the safetensors metadata entry `pretrained_cfg` (a JSON object, as timm names
//      it): mean, std, crop_pct, crop_mode ("center" / "squash"), interpolation
//      ("bilinear" / "bicubic");
//   2. pretrained_cfg.json beside the weights, the same keys;
//   3. config.json beside the weights: its `pretrained_cfg` object (timm's hub files),
//      else the same keys at the top level;
//   4. preprocessor_config.json beside the weights (Hugging Face): image_mean,
//      image_std, resample (PIL codes: 2 bilinear, 3 bicubic), size
//      ({"shortest_edge": n}: resize the shorter side; {"height": h, "width": w} or n:
//      squash) and crop_size with do_center_crop, giving crop_pct = crop / size;
//   5. else vitune's defaults (data::Preprocessing): 0.5 / 0.5, crop_pct 1, center,
//      bicubic -- what vitune's own checkpoints have always been run with.
// A field of the wrong type or value is an error naming the file and the field.
#pragma once

#include <map>
#include <set>
#include <string>

#include "data/transform_presets.h"
#include "nn/checkpoint.h"

namespace vitune::nn {

struct ModelPreprocessing {
  data::Preprocessing values;
  // Per field ("mean", "std", "crop_pct", "crop_mode", "interpolation"): where its value
  // came from, e.g. "from m.safetensors (metadata pretrained_cfg)" or "vitune default".
  std::map<std::string, std::string> sources;
};

// The preprocessing of the weights at `weights_path`, whose safetensors metadata is
// `metadata` (empty for npz). The fields named in `given` are neither read nor checked:
// the caller sets them (a flag overriding a value this build cannot use is no error).
ModelPreprocessing read_preprocessing(const std::string& weights_path,
                                      const std::map<std::string, std::string>& metadata,
                                      const std::set<std::string>& given = {});
inline ModelPreprocessing read_preprocessing(const LoadedVit& loaded, const std::set<std::string>& given = {}) {
  return read_preprocessing(loaded.path, loaded.metadata, given);
}

// vitune's defaults, each field's source "vitune default".
ModelPreprocessing default_preprocessing();

// `preprocessing` as the pretrained_cfg JSON object read_preprocessing reads back.
std::string pretrained_cfg_json(const data::Preprocessing& preprocessing);

}  // namespace vitune::nn
