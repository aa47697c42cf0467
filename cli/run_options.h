// The flags shared by pretrain, finetune and eval: data (spec, batch size, transforms,
// loader threads), optimisation (optimizer, schedule, clipping, steps or epochs),
// outputs (model, checkpoint, log, results) and the seed; and the results file.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/output_paths.h"
#include "cli/preprocess_options.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "nn/trainer.h"

namespace vitune::cli {

struct DataOptions {
  std::string train_spec;
  std::string eval_spec;
  int64_t batch_size = 128;
  int eval_batch_size = 256;
  int loader_threads = 2;
  PreprocessOptions preprocess;
  bool flip = false;
  bool random_resized_crop = false;
  bool skip_bad_images = false;

  void add_to(CLI::App& command, bool training);
};

// A dataset and a loader over it, made for a model's input.
struct OpenedData {
  std::shared_ptr<const data::Dataset> dataset;
  std::unique_ptr<data::Loader> loader;
  std::string canonical_spec;
};
OpenedData open_training_data(const DataOptions& options, const ModelInput& input, uint64_t seed);
OpenedData open_eval_data(const std::string& spec, const DataOptions& options, const ModelInput& input);

struct OptimOptions {
  std::string optimizer = "adamw";
  double lr = 1e-3;
  double momentum = 0.9;
  bool nesterov = false;
  double weight_decay = 0.05;
  std::string schedule = "cosine";
  int64_t warmup_steps = 0;
  double min_lr = 0.0;
  double clip_norm = 1.0;
  double label_smoothing = 0.0;
  int64_t steps = 0;
  double epochs = 0;
  int64_t log_every = 20;
  int64_t eval_every = 0;
  int64_t checkpoint_every = 0;

  void add_to(CLI::App& command);
  // The trainer's config; steps from --steps, else from --epochs and the batches per epoch.
  nn::TrainConfig train_config(int64_t batches_per_epoch) const;
};

struct OutputOptions {
  std::string model_out;
  std::string checkpoint;
  std::string log;
  std::string results;
  bool resume = false;
  uint64_t seed = 0;
  OutputFlags flags;  // --overwrite, --no-lock

  void add_to(CLI::App& command, bool training);
};

// Writes a results JSON atomically (when `path` is not empty, saying so); adds wall time
// and peak host memory.
void write_results(const std::string& path, nlohmann::ordered_json results, double seconds);
nlohmann::ordered_json eval_json(const nn::EvalResult& result);

}  // namespace vitune::cli
