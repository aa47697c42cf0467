// The shared flags of the training and evaluation commands, and the results file.
#include "cli/flag_checks.h"
#include "cli/run_options.h"

#include <cmath>

#include "data/dataset_spec.h"
#include "data/open_dataset.h"
#include "engine/allocator.h"
#include "engine/atomic_file.h"

namespace vitune::cli {

void DataOptions::add_to(CLI::App& command, bool training) {
  if (training) {
    command.add_option("--data", train_spec, "Training data: a dataset spec (see the README)")->required();
    command.add_option("--eval-data", eval_spec, "Evaluation data spec, evaluated during and after training");
    command.add_option("--batch-size", batch_size, "Training batch size")->check(integer_in(1, 65536));
    command.add_flag("--flip", flip, "Random horizontal flips during training");
    command.add_flag("--random-resized-crop", random_resized_crop,
                     "Random resized crops (scale 0.08-1) during training");
  } else {
    command.add_option("--data", eval_spec, "Evaluation data: a dataset spec (see the README)")->required();
  }
  command.add_option("--eval-batch-size", eval_batch_size, "Evaluation batch size")->check(integer_in(1, 65536));
  command.add_option("--loader-threads", loader_threads, "Background threads decoding and transforming images")
      ->check(integer_in(1, 256));
  preprocess.add_to(command);
  command.add_flag("--skip-bad-images", skip_bad_images,
                   "Leave out images that cannot be read or decoded, and count them, instead of stopping");
}

namespace {

// The dataset of `spec_text` and a loader over it through the transform `make` gives.
template <class MakeTransform>
OpenedData open_data(const std::string& spec_text, MakeTransform make, data::LoaderOptions loader) {
  data::DatasetSpec spec = data::parse_dataset_spec(spec_text);
  OpenedData opened;
  opened.dataset = data::open_dataset(spec);
  opened.canonical_spec = spec.canonical();
  opened.loader = std::make_unique<data::Loader>(*opened.dataset, make(*opened.dataset, opened.canonical_spec), loader);
  return opened;
}

}  // namespace

OpenedData open_training_data(const DataOptions& options, const ModelInput& input, uint64_t seed) {
  data::LoaderOptions loader;
  loader.batch_size = options.batch_size;
  loader.shuffle = true;
  loader.seed = seed;
  loader.drop_last = true;
  loader.threads = options.loader_threads;
  loader.skip_bad_images = options.skip_bad_images;
  return open_data(
      options.train_spec,
      [&](const data::Dataset& dataset, const std::string& spec) {
        return input.train_transform(dataset, spec, options.random_resized_crop, options.flip);
      },
      loader);
}

OpenedData open_eval_data(const std::string& spec, const DataOptions& options, const ModelInput& input) {
  data::LoaderOptions loader;
  loader.batch_size = options.eval_batch_size;
  loader.threads = options.loader_threads;
  loader.skip_bad_images = options.skip_bad_images;
  return open_data(
      spec, [&](const data::Dataset& dataset, const std::string& name) { return input.eval_transform(dataset, name); },
      loader);
}

void OptimOptions::add_to(CLI::App& command) {
  command.add_option("--optimizer", optimizer, "sgd (momentum) or adamw");
  command.add_option("--lr", lr, "Peak learning rate")->check(positive_number());
  command.add_option("--momentum", momentum, "SGD momentum")->check(number_in(0.0, 1.0));
  command.add_flag("--nesterov", nesterov, "Nesterov momentum for SGD");
  command.add_option("--weight-decay", weight_decay, "Weight decay (decoupled for AdamW)")
      ->check(number_from(0));
  command.add_option("--schedule", schedule, "Learning-rate schedule: cosine, constant or step");
  command.add_option("--warmup-steps", warmup_steps, "Linear warmup steps")->check(integer_from(0));
  command.add_option("--min-lr", min_lr, "Floor of the cosine schedule")->check(number_from(0));
  command.add_option("--clip-norm", clip_norm, "Clip gradients to this global norm (0: off)")
      ->check(number_from(0));
  command.add_option("--label-smoothing", label_smoothing, "Label smoothing of the loss")->check(number_in(0.0, 0.999));
  command.add_option("--steps", steps, "Optimizer steps (overrides --epochs)")->check(integer_from(0));
  command.add_option("--epochs", epochs, "Epochs of the training data (default 1 when --steps is not given)")
      ->check(number_from(0));
  command.add_option("--log-every", log_every, "Steps between JSON log lines")->check(integer_from(0));
  command.add_option("--eval-every", eval_every, "Steps between evaluations (0: at the end only)")
      ->check(integer_from(0));
  command.add_option("--checkpoint-every", checkpoint_every, "Steps between checkpoints (0: at the end only)")
      ->check(integer_from(0));
}

nn::TrainConfig OptimOptions::train_config(int64_t batches_per_epoch) const {
  nn::TrainConfig config;
  config.optimizer = nn::parse_optimizer_kind(optimizer, "--optimizer");
  config.momentum = momentum;
  config.nesterov = nesterov;
  config.weight_decay = weight_decay;
  config.clip_norm = clip_norm;
  config.label_smoothing = label_smoothing;
  config.steps = steps > 0 ? steps : std::max<int64_t>(1, std::llround((epochs > 0 ? epochs : 1.0) * double(batches_per_epoch)));
  config.log_every = log_every;
  config.eval_every = eval_every;
  config.checkpoint_every = checkpoint_every;
  config.schedule.kind = nn::parse_schedule_kind(schedule, "--schedule");
  config.schedule.base_lr = lr;
  config.schedule.warmup_steps = warmup_steps;
  config.schedule.total_steps = config.steps;
  config.schedule.min_lr = min_lr;
  return config;
}

void OutputOptions::add_to(CLI::App& command, bool training) {
  if (training) {
    command.add_option("--out", model_out, "Write the trained model here (timm safetensors)")->required();
    command.add_option("--checkpoint", checkpoint,
                       "Training checkpoint (weights, optimizer state, step, data position), written "
                       "atomically; with --resume, continue from it");
    command.add_flag("--resume", resume, "Continue exactly from --checkpoint");
    command.add_option("--log", log, "Training log, one JSON object per line");
    command.add_option("--seed", seed, "Seed of the data order, augmentation and initialisation")->check(seed_value());
  }
  command.add_option("--results", results, "Write a results JSON here");
  flags.add_to(command);
}

nlohmann::ordered_json eval_json(const nn::EvalResult& result) {
  return {{"top1", result.top1}, {"top5", result.top5}, {"loss", result.loss}, {"examples", result.examples}};
}

void write_results(const std::string& path, nlohmann::ordered_json results, double seconds) {
  results["wall_seconds"] = seconds;
  results["peak_host_bytes"] = memory_stats(Device::cpu()).peak_bytes;
  if (path.empty()) return;
  write_file_atomically(path, results.dump(2) + "\n");
  print_wrote("results", path);
}

}  // namespace vitune::cli
