// The preprocessing flags, their resolution over a checkpoint's metadata, and the
// fixed-size check.
#include "cli/preprocess_options.h"

#include <iomanip>
#include <sstream>
#include <tuple>
#include <utility>

#include "cli/flag_checks.h"
#include "data/transform_presets.h"
#include "data/transform_steps.h"
#include "engine/error.h"

namespace vitune::cli {

void PreprocessOptions::add_to(CLI::App& command) {
  CLI::Option* preset = command.add_option(
      "--normalization", normalization,
      "Normalisation preset, short for --mean/--std: half (0.5, 0.5) or imagenet (0.485,0.456,0.406 / "
      "0.229,0.224,0.225) (default: the checkpoint's metadata, else half)");
  preset->check(CLI::IsMember({"half", "imagenet"}));
  command.add_option("--mean", mean, "Per-channel mean subtracted from pixels in [0, 1]: R,G,B or one value "
                                     "(default: the checkpoint's metadata, else 0.5)")
      ->delimiter(',')
      ->check(number_in(0, 1))
      ->excludes(preset);
  command.add_option("--std", std, "Per-channel standard deviation the pixels are divided by: R,G,B or one value "
                                   "(default: the checkpoint's metadata, else 0.5)")
      ->delimiter(',')
      ->check(positive_number())
      ->excludes(preset);
  command.add_option("--crop-pct", crop_pct,
                     "Evaluation centre crop as a fraction of the resized image: the shorter side is resized to "
                     "floor(size / crop-pct) (default: the checkpoint's metadata, else 1)")
      ->check(number_in(0, 1));
  command.add_option("--interpolation", interpolation,
                     "Resizing filter: bilinear or bicubic (default: the checkpoint's metadata, else bicubic)")
      ->check(CLI::IsMember({"bilinear", "bicubic"}));
  command.add_flag("--resize-images", resize_images,
                   "Resize images of a fixed size (IDX, CIFAR) that differs from the model's input size to it; "
                   "without it such data is refused (or pass --img-size to run the model at the data's size)");
}

std::set<std::string> PreprocessOptions::given() const {
  std::set<std::string> fields;
  if (!normalization.empty() || !mean.empty()) fields.insert("mean");
  if (!normalization.empty() || !std.empty()) fields.insert("std");
  if (crop_pct) fields.insert("crop_pct");
  if (!interpolation.empty()) fields.insert("interpolation");
  return fields;
}

ModelInput PreprocessOptions::with_flags(const nn::VitConfig& config, nn::ModelPreprocessing preprocessing) const {
  data::Preprocessing& p = preprocessing.values;
  auto& sources = preprocessing.sources;
  if (!normalization.empty()) {
    p.normalization = data::normalization_preset(normalization);
    sources["mean"] = sources["std"] = "from --normalization " + normalization;
  }
  for (const auto& [name, values, field] : {std::tuple{"mean", &mean, &p.normalization.mean},
                                            std::tuple{"std", &std, &p.normalization.std}}) {
    if (values->empty()) continue;
    VITUNE_CHECK(values->size() == 1 || values->size() == 3, "--", name, ": expected one value or three (R,G,B), got ",
                 values->size());
    *field = *values;
    sources[name] = cat("from --", name);
  }
  // One value beside three (--mean R,G,B over a one-value std) applies to every channel.
  for (auto [one, three] : {std::pair{&p.normalization.mean, &p.normalization.std},
                            std::pair{&p.normalization.std, &p.normalization.mean}}) {
    if (one->size() == 1 && three->size() == 3) one->resize(3, one->front());
  }
  if (crop_pct) {
    VITUNE_CHECK(*crop_pct > 0, "--crop-pct: expected a number in (0, 1], got ", *crop_pct);
    p.crop_pct = *crop_pct, sources["crop_pct"] = "from --crop-pct";
  }
  if (!interpolation.empty()) {
    p.interpolation = interpolation == "bilinear" ? data::Interpolation::Bilinear : data::Interpolation::Bicubic;
    sources["interpolation"] = "from --interpolation";
  }
  return {config.img_size, config.in_chans, std::move(preprocessing), resize_images};
}

std::vector<std::string> PreprocessOptions::arguments() const {
  auto list = [](const std::vector<float>& values) {
    std::ostringstream text;
    text << std::setprecision(9);
    for (size_t i = 0; i < values.size(); ++i) text << (i ? "," : "") << values[i];
    return text.str();
  };
  std::vector<std::string> out;
  if (!normalization.empty()) out.insert(out.end(), {"--normalization", normalization});
  if (!mean.empty()) out.insert(out.end(), {"--mean", list(mean)});
  if (!std.empty()) out.insert(out.end(), {"--std", list(std)});
  if (crop_pct) out.insert(out.end(), {"--crop-pct", cat(std::setprecision(17), *crop_pct)});
  if (!interpolation.empty()) out.insert(out.end(), {"--interpolation", interpolation});
  if (resize_images) out.push_back("--resize-images");
  return out;
}

ModelInput PreprocessOptions::input_for(const nn::LoadedVit& loaded) const {
  return with_flags(loaded.model->config(), nn::read_preprocessing(loaded, given()));
}

ModelInput PreprocessOptions::input_for(const nn::VitConfig& config) const {
  return with_flags(config, nn::default_preprocessing());
}

namespace {

// Whether every image of `dataset` has the model's size; stops when they all have
// another one and resizing was not asked for.
bool images_fit(const ModelInput& input, const data::Dataset& dataset, const std::string& spec) {
  const std::optional<data::ImageSize> fixed = dataset.fixed_size();
  if (!fixed) return false;
  const data::ImageSize model{input.size, input.size};
  if (*fixed == model) return true;
  VITUNE_CHECK(input.resize_images, spec, ": every image is ", fixed->height, "x", fixed->width,
               " but the model takes ", input.size, "x", input.size, " images; vitune does not resize them "
               "silently. Either run the model at the data's size with --img-size ",
               fixed->height == fixed->width ? std::to_string(fixed->height) : std::string("N"),
               " (the position embedding is resampled), or resize every image to ", input.size, "x", input.size,
               " with --resize-images");
  return false;
}

}  // namespace

data::Transform ModelInput::eval_transform(const data::Dataset& dataset, const std::string& spec) const {
  if (!images_fit(*this, dataset, spec)) {
    return data::eval_transform({size, channels, preprocessing.values});
  }
  const data::Normalization& norm = preprocessing.values.normalization;
  data::Transform transform;
  transform.then(std::make_shared<data::ToChannels>(channels))
      .then(std::make_shared<data::Normalize>(norm.mean, norm.std));
  return transform;
}

data::Transform ModelInput::train_transform(const data::Dataset& dataset, const std::string& spec,
                                            bool random_resized_crop, bool flip) const {
  images_fit(*this, dataset, spec);
  data::TrainTransformOptions options;
  options.size = size;
  options.channels = channels;
  options.preprocessing = preprocessing.values;
  options.random_resized_crop = random_resized_crop;
  options.horizontal_flip = flip;
  return data::train_transform(options);
}

std::string ModelInput::pretrained_cfg() const { return nn::pretrained_cfg_json(preprocessing.values); }

}  // namespace vitune::cli
