// `vitune anchor`: the prior anchor of GD-FPS, the mean |input feature| of every linear
// map of a model over pretraining images, written to a safetensors file.
#include <cstdio>

#include "cli/flag_checks.h"
#include "cli/commands.h"
#include "cli/device_options.h"
#include "cli/model_options.h"
#include "cli/output_paths.h"
#include "cli/preprocess_options.h"
#include "cli/progress.h"
#include "cli/run_options.h"
#include "data/dataset_spec.h"
#include "data/open_dataset.h"
#include "data/subset.h"
#include "peft/anchor.h"
#include "peft/model_hash.h"

namespace vitune::cli {

namespace {

struct AnchorOptions {
  ModelOptions model;
  DeviceOptions device;
  std::string data;
  int64_t images = 0;
  int64_t batch_size = 64;
  int loader_threads = 2;
  PreprocessOptions preprocess;
  std::string out;
  std::string results;
  OutputFlags output;
};

void run_anchor(const AnchorOptions& options) {
  CommandOutputs outputs(options.output);
  outputs.input(options.model.path).file("--out", options.out).file("--results", options.results).check_and_lock();
  const Device device = options.device.select();
  nn::LoadedVit loaded = options.model.load_model(device);
  const nn::VisionTransformer& model = *loaded.model;
  const data::DatasetSpec spec = data::parse_dataset_spec(options.data);
  std::shared_ptr<const data::Dataset> dataset = data::open_dataset(spec);
  if (options.images > 0) {
    VITUNE_CHECK(options.images <= dataset->size(), "--images ", options.images, ": ", spec.canonical(),
                 " has only ", dataset->size(), " images");
    dataset = data::first_examples(dataset, options.images);
  }
  data::LoaderOptions loader_options;
  loader_options.batch_size = options.batch_size;
  loader_options.threads = options.loader_threads;
  data::Loader loader(*dataset, options.preprocess.input_for(loaded).eval_transform(*dataset, spec.canonical()),
                      loader_options);

  peft::ActivationStats stats(model);
  Progress progress("anchor", dataset->size(), "image", 1000);
  peft::measure_activations(stats, loader, [&](int64_t done) { progress.update(done); });
  progress.finish();
  const std::string hash = peft::backbone_hash(model);
  peft::save_anchor(options.out, stats, hash, spec.canonical());
  std::printf("anchor: %zu layers over %lld images of %s (model %s)\n", stats.layers().size(),
              (long long)stats.images(), spec.canonical().c_str(), hash.c_str());
  print_wrote("anchor", options.out);
  nlohmann::ordered_json results = {{"command", "anchor"}, {"model", options.model.path},
                                    {"model_hash", hash},  {"data", spec.canonical()},
                                    {"images", stats.images()}, {"out", options.out}};
  add_device_memory(device, results);
  write_results(options.results, results, progress.seconds());
}

}  // namespace

void add_anchor_command(CLI::App& app) {
  auto options = std::make_shared<AnchorOptions>();
  CLI::App* command = app.add_subcommand(
      "anchor", "GD-FPS prior anchor: mean |input| of every linear map over pretraining images");
  command->add_option("--model", options->model.path, "Checkpoint (timm/Hugging Face .safetensors, .npz)")
      ->required();
  options->model.add_to(*command);
  options->device.add_to(*command);
  command->add_option("--data", options->data, "Pretraining data: a dataset spec (see the README)")->required();
  command->add_option("--images", options->images, "Use the first N images of the data (default: all)")
      ->check(integer_from(0));
  command->add_option("--batch-size", options->batch_size, "Images per forward pass (does not change the result)")
      ->check(integer_in(1, 65536));
  command->add_option("--loader-threads", options->loader_threads, "Background threads decoding images")
      ->check(integer_in(1, 256));
  options->preprocess.add_to(*command);
  command->add_option("--out", options->out, "Write the anchor here (safetensors)")->required();
  command->add_option("--results", options->results, "Write a results JSON here");
  options->output.add_to(*command);
  command->callback([options] { run_anchor(*options); });
}

}  // namespace vitune::cli
