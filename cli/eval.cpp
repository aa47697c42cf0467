// `vitune eval`: top-1 and top-5 accuracy and the loss of a model on a dataset.
#include <cstdio>

#include "cli/commands.h"
#include "cli/device_options.h"
#include "cli/model_options.h"
#include "cli/progress.h"
#include "cli/run_options.h"

namespace vitune::cli {

namespace {

struct EvalOptions {
  ModelOptions model;
  DeviceOptions device;
  DataOptions data;
  OutputOptions output;
};

void run_eval(const EvalOptions& options) {
  CommandOutputs outputs(options.output.flags);
  outputs.input(options.model.path).file("--results", options.output.results).check_and_lock();
  const Device device = options.device.select();
  nn::LoadedVit loaded = options.model.load_pooled_model(device, "eval");
  VITUNE_CHECK(loaded.model->head, options.model.path, ": the model has no head (num_classes 0) to evaluate");
  const ModelInput input = options.data.preprocess.input_for(loaded);
  OpenedData eval = open_eval_data(options.data.eval_spec, options.data, input);
  VITUNE_CHECK(eval.dataset->num_classes() <= loaded.model->config().num_classes, options.data.eval_spec, ": has ",
               eval.dataset->num_classes(), " classes but the model's head has ", loaded.model->config().num_classes);
  Progress progress("eval", eval.loader->batches_per_epoch(), "batch", 10);
  nn::EvalResult result = nn::evaluate(*loaded.model, *eval.loader, eval.loader->batches_per_epoch());
  progress.update(eval.loader->batches_per_epoch());
  progress.finish();
  std::printf("eval: top-1 %.2f%%, top-5 %.2f%%, loss %.4f on %lld images of %s\n", 100 * result.top1,
              100 * result.top5, result.loss, (long long)result.examples, eval.canonical_spec.c_str());
  nlohmann::ordered_json results = {{"command", "eval"},
                                    {"model", options.model.path},
                                    {"config", nlohmann::ordered_json::parse(loaded.model->config().to_json())},
                                    {"preprocessing", nlohmann::ordered_json::parse(input.pretrained_cfg())},
                                    {"data", eval.canonical_spec},
                                    {"eval", eval_json(result)},
                                    {"skipped_images", eval.loader->skipped_images()}};
  add_device_memory(device, results);
  write_results(options.output.results, results, progress.seconds());
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto options = std::make_shared<EvalOptions>();
  CLI::App* command = app.add_subcommand("eval", "Top-1/top-5 accuracy and loss of a model on a dataset");
  command->add_option("--model", options->model.path, "Checkpoint (timm/Hugging Face .safetensors, .npz)")->required();
  options->model.add_to(*command);
  options->data.add_to(*command, false);
  options->output.add_to(*command, false);
  options->device.add_to(*command);
  command->callback([options] { run_eval(*options); });
}

}  // namespace vitune::cli
