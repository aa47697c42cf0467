// `vitune probe`: the logistic-regression linear probe, the baseline the sweep's
// accuracies are compared with: the frozen model's pooled features of the training data,
// multinomial logistic regression fit to them with L-BFGS in float64, its top-1 on the
// evaluation data.
#include <chrono>
#include <cstdio>

#include "cli/commands.h"
#include "cli/device_options.h"
#include "cli/flag_checks.h"
#include "cli/model_options.h"
#include "cli/progress.h"
#include "cli/run_options.h"
#include "peft/linear_probe.h"

namespace vitune::cli {

namespace {

struct ProbeOptions {
  ModelOptions model;
  DeviceOptions device;
  DataOptions data;
  OutputOptions output;
  peft::LogisticOptions fit;
};

// The pooled features of every image of `spec`, without augmentation.
peft::ProbeFeatures features_of(const std::string& spec, const ProbeOptions& options, const nn::LoadedVit& loaded,
                                const ModelInput& input, OpenedData& opened) {
  opened = open_eval_data(spec, options.data, input);
  Progress progress("features of " + spec, opened.loader->batches_per_epoch(), "batch", 10);
  peft::ProbeFeatures features =
      peft::extract_features(*loaded.model, *opened.loader, opened.loader->batches_per_epoch());
  progress.update(opened.loader->batches_per_epoch());
  progress.finish();
  VITUNE_CHECK(features.count > 0, spec, ": no images to compute features of");
  return features;
}

void run_probe(const ProbeOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  CommandOutputs outputs(options.output.flags);
  outputs.input(options.model.path).file("--results", options.output.results).check_and_lock();
  const Device device = options.device.select();
  nn::LoadedVit loaded = options.model.load_pooled_model(device, "probe");
  const ModelInput input = options.data.preprocess.input_for(loaded);
  OpenedData train, eval;
  const peft::ProbeFeatures train_features = features_of(options.data.train_spec, options, loaded, input, train);
  const peft::ProbeFeatures eval_features = features_of(options.data.eval_spec, options, loaded, input, eval);
  const int64_t classes = train.dataset->num_classes();
  VITUNE_CHECK(eval.dataset->num_classes() <= classes, "--eval-data: ", options.data.eval_spec, " has ",
               eval.dataset->num_classes(), " classes but the training data (--data) has ", classes);

  const peft::LogisticProbe probe = peft::fit_logistic_probe(train_features, classes, options.fit);
  VITUNE_CHECK(probe.converged, "probe: L-BFGS stopped after ", probe.iterations,
               " iterations with the largest gradient entry at ", probe.gradient_max, " (tolerance ",
               options.fit.tolerance, "); raise --max-iterations");
  const double train_top1 = peft::probe_accuracy(probe, train_features);
  const double eval_top1 = peft::probe_accuracy(probe, eval_features);
  std::printf("probe: logistic regression (C %g) on %lld features of dimension %lld converged in %lld L-BFGS "
              "iterations; top-1 %.2f%% on the training data, %.2f%% on %lld images of %s\n",
              options.fit.c, (long long)train_features.count, (long long)train_features.dim,
              (long long)probe.iterations, 100 * train_top1, 100 * eval_top1, (long long)eval_features.count,
              eval.canonical_spec.c_str());
  nlohmann::ordered_json results = {
      {"command", "probe"},
      {"model", options.model.path},
      {"config", nlohmann::ordered_json::parse(loaded.model->config().to_json())},
      {"preprocessing", nlohmann::ordered_json::parse(input.pretrained_cfg())},
      {"data_spec", options.data.train_spec},
      {"eval_data_spec", options.data.eval_spec},
      {"data", train.canonical_spec},
      {"eval_data", eval.canonical_spec},
      {"features", "pooled (the head's input), frozen model"},
      {"classifier", "multinomial logistic regression, L2 on the weights (scikit-learn's C), L-BFGS, float64"},
      {"c", options.fit.c},
      {"fit",
       {{"examples", train_features.count},
        {"feature_dim", train_features.dim},
        {"classes", classes},
        {"iterations", probe.iterations},
        {"objective", probe.objective},
        {"gradient_max", probe.gradient_max},
        {"top1", train_top1}}},
      {"eval", {{"top1", eval_top1}, {"examples", eval_features.count}}},
      {"skipped_images", train.loader->skipped_images() + eval.loader->skipped_images()}};
  add_device_memory(device, results);
  write_results(options.output.results, results,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace

void add_probe_command(CLI::App& app) {
  auto options = std::make_shared<ProbeOptions>();
  CLI::App* command = app.add_subcommand(
      "probe", "Linear-probe baseline: logistic regression (L-BFGS, float64) on the frozen model's pooled features");
  command->add_option("--model", options->model.path, "Checkpoint (timm/Hugging Face .safetensors, .npz)")->required();
  options->model.add_to(*command);
  options->data.add_to(*command, true);
  // The features are those of the evaluation transform: no augmentation, no batches of training.
  for (const char* unused : {"--batch-size", "--flip", "--random-resized-crop"}) {
    command->remove_option(command->get_option(unused));
  }
  command->get_option("--eval-data")->required()->description("Evaluation data spec: the probe's top-1 is on it");
  command->get_option("--data")->description("Training data spec: the logistic regression is fit on its features");
  options->output.add_to(*command, false);
  command->get_option("--results")->required();
  options->device.add_to(*command);
  command->add_option("--c", options->fit.c, "Inverse L2 regularisation strength, as scikit-learn's C")
      ->check(positive_number())
      ->capture_default_str();
  command->add_option("--max-iterations", options->fit.max_iterations, "L-BFGS iterations at most")
      ->check(integer_in(1, 1000000))
      ->capture_default_str();
  command->callback([options] { run_probe(*options); });
}

}  // namespace vitune::cli
