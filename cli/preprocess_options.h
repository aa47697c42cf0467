// The flags of every command that feeds images to a model: the preprocessing (--mean,
// --std, --normalization, --crop-pct, --interpolation, each over what the checkpoint's
// metadata says, nn/preprocessing.h) and --resize-images; and the one check that a
// dataset whose images all have one size (IDX, CIFAR) has the model's, which stops a
// command before any work instead of resizing silently.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/transform.h"
#include "nn/preprocessing.h"

namespace vitune::cli {

// What a model is fed: its input size and channels, its preprocessing, and whether
// images of another fixed size may be resized to it.
struct ModelInput {
  int size = 0;
  int channels = 0;
  nn::ModelPreprocessing preprocessing;
  bool resize_images = false;

  // Both check the images of `dataset` (named `spec` in messages) first (see above).
  // The evaluation transform: for images of the model's size, channel conversion and
  // normalisation only; else resize, centre crop, channels, normalisation.
  data::Transform eval_transform(const data::Dataset& dataset, const std::string& spec) const;
  // The training transform: random resized crops or a resize to the model's size, flips.
  data::Transform train_transform(const data::Dataset& dataset, const std::string& spec, bool random_resized_crop,
                                  bool flip) const;
  // The preprocessing as the pretrained_cfg JSON object, for results and saved models.
  std::string pretrained_cfg() const;
};

struct PreprocessOptions {
  std::string normalization;  // a preset; empty: not given
  std::vector<float> mean;    // empty: not given
  std::vector<float> std;
  std::optional<double> crop_pct;
  std::string interpolation;  // empty: not given
  bool resize_images = false;

  void add_to(CLI::App& command);
  // The input of a loaded checkpoint: the flags over its metadata.
  ModelInput input_for(const nn::LoadedVit& loaded) const;
  // The input of a model without a checkpoint (pretrain): the flags over vitune's defaults.
  ModelInput input_for(const nn::VitConfig& config) const;
  // The flags given, as a command line passes them on (the demo's steps).
  std::vector<std::string> arguments() const;

 private:
  ModelInput with_flags(const nn::VitConfig& config, nn::ModelPreprocessing preprocessing) const;
  std::set<std::string> given() const;
};

}  // namespace vitune::cli
