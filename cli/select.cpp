// `vitune select`: chooses the weights to finetune, K per output row of each
// selectable weight, by GD-FPS, GPS, at random or by magnitude, and writes the mask.
// Reports the selection's wall time, peak host memory and FLOPs per image.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "cli/flag_checks.h"
#include "cli/commands.h"
#include "cli/device_options.h"
#include "cli/model_options.h"
#include "cli/output_paths.h"
#include "cli/progress.h"
#include "cli/preprocess_options.h"
#include "cli/run_options.h"
#include "data/dataset_spec.h"
#include "data/open_dataset.h"
#include "data/subset.h"
#include "data/transform_presets.h"
#include "engine/allocator.h"
#include "engine/flop_counter.h"
#include "peft/gdfps.h"
#include "peft/gps.h"
#include "peft/selection.h"

namespace vitune::cli {

namespace {

struct SelectOptions {
  ModelOptions model;
  DeviceOptions device;
  std::string method;
  std::string anchor;
  std::string data;
  int64_t k = 0;
  std::string out;
  int64_t batch_size = 32;
  uint64_t seed = 0;
  int64_t images = 0;
  std::string gps_loss = "supcon";
  std::vector<std::string> selectable;
  std::vector<std::string> full;
  int loader_threads = 2;
  PreprocessOptions preprocess;
  std::string results;
  OutputFlags output;
};

// The task's images and the views the model sees them through: the evaluation
// transform, and GPS's augmented view (random resized crops and flips).
struct TaskData {
  std::shared_ptr<const data::Dataset> dataset;
  std::string spec;  // canonical
  data::Transform eval_view, train_view;
};

TaskData open_task_data(const SelectOptions& options, const ModelInput& input) {
  const data::DatasetSpec spec = data::parse_dataset_spec(options.data);
  TaskData task;
  task.dataset = data::open_dataset(spec);
  task.spec = spec.canonical();
  if (options.images > 0) {
    VITUNE_CHECK(options.images <= task.dataset->size(), "--images ", options.images, ": ", task.spec, " has only ",
                 task.dataset->size(), " images");
    task.dataset = data::first_examples(task.dataset, options.images);
  }
  task.eval_view = input.eval_transform(*task.dataset, task.spec);
  task.train_view = input.train_transform(*task.dataset, task.spec, true, true);
  return task;
}

std::vector<peft::TensorSelection> select_gdfps(const nn::VisionTransformer& model, const peft::Anchor& anchor,
                                                const std::vector<std::string>& names, const TaskData& task,
                                                const SelectOptions& options) {
  data::LoaderOptions loader_options;
  loader_options.batch_size = options.batch_size;
  loader_options.threads = options.loader_threads;
  data::Loader loader(*task.dataset, task.eval_view, loader_options);
  peft::ActivationStats stats(model);
  Progress progress("task statistics", task.dataset->size(), "image", 1000);
  peft::measure_activations(stats, loader, [&](int64_t done) { progress.update(done); });
  progress.finish();
  return peft::gdfps_select(model, names, anchor, stats.means(), options.k);
}

std::vector<peft::TensorSelection> select_gps(nn::VisionTransformer& model, const std::vector<std::string>& names,
                                              const TaskData& task, const SelectOptions& options) {
  peft::GpsOptions gps;
  gps.loss = peft::parse_gps_loss(options.gps_loss);
  gps.batch_size = options.batch_size;
  gps.seed = options.seed;
  gps.loader_threads = options.loader_threads;
  const auto scores = peft::gps_scores(model, names, *task.dataset, task.eval_view, task.train_view, gps);
  std::vector<peft::TensorSelection> selections;
  for (const auto& [name, score] : scores) {
    selections.push_back({name, peft::top_k_per_row(peft::as_rows(score), options.k)});
  }
  return selections;
}

std::vector<peft::TensorSelection> select_without_data(const nn::VisionTransformer& model,
                                                       const std::vector<std::string>& names,
                                                       const SelectOptions& options) {
  std::vector<peft::TensorSelection> selections;
  const auto& parameters = model.parameters();
  for (const std::string& name : names) {
    const Tensor& weight = model.parameter(name).value();
    if (options.method == "magnitude") {
      selections.push_back({name, peft::magnitude_per_row(weight, options.k)});
      continue;
    }
    const uint64_t index = uint64_t(std::find_if(parameters.begin(), parameters.end(),
                                                 [&](const nn::Parameter* p) { return p->name() == name; }) -
                                    parameters.begin());
    selections.push_back(
        {name, peft::random_per_row(weight.dim(0), weight.numel() / weight.dim(0), options.k, options.seed, index)});
  }
  return selections;
}

peft::SelectionPolicy policy_of(const SelectOptions& options) {
  peft::SelectionPolicy policy = peft::SelectionPolicy::gps_default();
  if (!options.selectable.empty()) policy.selectable = options.selectable;
  if (!options.full.empty()) policy.full = options.full;
  if (options.full == std::vector<std::string>{"none"}) policy.full.clear();
  return policy;
}

void check_flags(const SelectOptions& options) {
  const bool uses_data = options.method == "gdfps" || options.method == "gps";
  VITUNE_CHECK(uses_data || options.method == "random" || options.method == "magnitude", "--method ", options.method,
               ": expected gdfps, gps, random or magnitude");
  VITUNE_CHECK(options.method != "gdfps" || !options.anchor.empty(),
               "--method gdfps needs --anchor (made by `vitune anchor` on pretraining data)");
  VITUNE_CHECK(options.method == "gdfps" || options.anchor.empty(), "--anchor is only used by --method gdfps");
  VITUNE_CHECK(!uses_data || !options.data.empty(), "--method ", options.method, " needs --data (the task data)");
  VITUNE_CHECK(uses_data || options.data.empty(), "--data is not used by --method ", options.method);
}

void print_table(const nn::VisionTransformer& model, const std::vector<peft::TensorSelection>& selections) {
  std::printf("%-28s %12s %10s %10s\n", "tensor", "rows x cols", "selected", "short rows");
  for (const peft::TensorSelection& s : selections) {
    const Tensor& w = model.parameter(s.name).value();
    const std::string shape = std::to_string(w.dim(0)) + " x " + std::to_string(w.numel() / w.dim(0));
    std::printf("%-28s %12s %10lld %10lld\n", s.name.c_str(), shape.c_str(), (long long)s.rows.indices.numel(),
                (long long)s.rows.short_rows);
  }
}

void run_select(const SelectOptions& options) {
  check_flags(options);
  CommandOutputs outputs(options.output);
  outputs.input(options.model.path).input(options.anchor);
  outputs.file("--out", options.out).file("--results", options.results).check_and_lock();
  const Device device = options.device.select();
  nn::LoadedVit loaded = options.model.load_model(device);
  // GPS ranks by the gradients of the loss on each image's prediction; the others read the blocks only.
  if (options.method == "gps") require_pooled(loaded, "select --method gps");
  nn::VisionTransformer& model = *loaded.model;
  const peft::SelectionPolicy policy = policy_of(options);
  const peft::PolicyTargets targets = peft::resolve_policy(model, policy);
  TaskData task;
  if (!options.data.empty()) task = open_task_data(options, options.preprocess.input_for(loaded));

  reset_peak_memory(Device::cpu());
  reset_peak_memory(device);
  reset_flop_counter();
  const auto start = std::chrono::steady_clock::now();
  std::vector<peft::TensorSelection> selections;
  std::map<std::string, std::string> metadata = {{"method", options.method},
                                                 {"data", task.dataset ? task.spec : "none"},
                                                 {"images", std::to_string(task.dataset ? task.dataset->size() : 0)},
                                                 {"seed", std::to_string(options.seed)}};
  if (options.method == "gdfps") {
    const peft::Anchor anchor = peft::load_anchor(options.anchor, model);
    metadata["anchor_data"] = anchor.metadata.at("data");
    metadata["anchor_images"] = anchor.metadata.at("images");
    selections = select_gdfps(model, anchor, targets.selectable, task, options);
  } else if (options.method == "gps") {
    metadata["gps_loss"] = options.gps_loss;
    selections = select_gps(model, targets.selectable, task, options);
  } else {
    selections = select_without_data(model, targets.selectable, options);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const int64_t peak = memory_stats(Device::cpu()).peak_bytes;  // host: the CPU run's figure
  const int64_t images = task.dataset ? task.dataset->size() : 0;
  const double flops_per_image = images > 0 ? double(flops_counted()) / double(images) : 0.0;

  int64_t short_rows = 0;
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  for (const peft::TensorSelection& s : selections) {
    short_rows += s.rows.short_rows;
    tensors.push_back({{"name", s.name},
                       {"size", model.parameter(s.name).numel()},
                       {"selected", s.rows.indices.numel()},
                       {"short_rows", s.rows.short_rows}});
  }
  print_table(model, selections);
  const peft::SelectionMask mask =
      peft::assemble_mask(model, targets, std::move(selections), options.k, policy, metadata);
  peft::save_mask(options.out, mask);
  std::printf("select %s: %lld entries (K = %lld per row) in %zu tensors, %zu tensors in full; %lld rows short\n",
              options.method.c_str(), (long long)mask.selected_count(), (long long)options.k, mask.selected.size(),
              mask.fully_trainable.size(), (long long)short_rows);
  std::printf("select %s: %.3f s, peak %.1f MiB, %.3f GFLOPs per image over %lld images\n", options.method.c_str(),
              seconds, double(peak) / (1 << 20), flops_per_image * 1e-9, (long long)images);
  print_wrote("mask", options.out);
  nlohmann::ordered_json results = {{"command", "select"},
                                    {"method", options.method},
                                    {"model", options.model.path},
                                    {"model_hash", mask.metadata.at("model_hash")},
                                    {"data", metadata.at("data")},
                                    {"images", images},
                                    {"k", options.k},
                                    {"seed", options.seed},
                                    {"policy", policy.describe()},
                                    {"out", options.out},
                                    {"flops_per_image", flops_per_image},
                                    {"selected_count", mask.selected_count()},
                                    {"short_rows", short_rows},
                                    {"fully_trainable", mask.fully_trainable},
                                    {"tensors", tensors}};
  add_device_memory(device, results);
  write_results(options.results, results, seconds);
}

}  // namespace

void add_select_command(CLI::App& app) {
  auto options = std::make_shared<SelectOptions>();
  CLI::App* command =
      app.add_subcommand("select", "Choose K weights per output row to finetune (GD-FPS, GPS, random, magnitude)");
  command->add_option("--method", options->method, "gdfps, gps, random or magnitude")->required();
  command->add_option("--model", options->model.path, "Checkpoint (timm/Hugging Face .safetensors, .npz)")
      ->required();
  options->model.add_to(*command);
  options->device.add_to(*command);
  command->add_option("--anchor", options->anchor, "GD-FPS prior anchor (from `vitune anchor`)");
  command->add_option("--data", options->data, "Task data: a dataset spec (gdfps and gps)");
  command->add_option("--k", options->k, "Weights selected per output row")->required()->check(integer_from(1));
  command->add_option("--out", options->out, "Write the mask here (safetensors)")->required();
  command->add_option("--batch-size", options->batch_size, "Images per batch")->check(integer_in(1, 65536));
  command->add_option("--seed", options->seed, "Seed of random selection, and of GPS's head and augmentations")
      ->check(seed_value());
  command->add_option("--images", options->images, "Use the first N images of the data (default: all)")
      ->check(integer_from(0));
  command->add_option("--gps-loss", options->gps_loss, "GPS loss: supcon (as GPS does) or ce");
  command->add_option("--selectable", options->selectable,
                      "Weights selected per row: parameter names, * matches anything "
                      "(default: patch_embed.proj.weight and the blocks' qkv, proj, fc1, fc2 weights)")
      ->delimiter(',');
  command->add_option("--full", options->full,
                      "Parameters trained in full, patterns as --selectable; `none` for nothing "
                      "(default: the biases of those weights and head.*)")
      ->delimiter(',');
  command->add_option("--loader-threads", options->loader_threads, "Background threads decoding images")
      ->check(integer_in(1, 256));
  options->preprocess.add_to(*command);
  command->add_option("--results", options->results, "Write a results JSON here");
  options->output.add_to(*command);
  command->callback([options] { run_select(*options); });
}

}  // namespace vitune::cli
