// `vitune export-delta` and `vitune apply-delta`: store a finetuned model as only what
// changed against its base (changed entries, and the new head whole), and rebuild the
// finetuned model from the base and that delta, bit for bit.
#include <cstdio>

#include "cli/commands.h"
#include "cli/device_options.h"
#include "cli/model_options.h"
#include "cli/output_paths.h"
#include "peft/delta.h"

namespace vitune::cli {

namespace {

struct ExportDeltaOptions {
  ModelOptions base;
  std::string finetuned;
  std::string out;
  DeviceOptions device;
  OutputFlags output;
};

struct ApplyDeltaOptions {
  ModelOptions base;
  std::string delta;
  std::string out;
  DeviceOptions device;
  OutputFlags output;
};

void run_export_delta(const ExportDeltaOptions& options) {
  CommandOutputs outputs(options.output);
  outputs.input(options.base.path).input(options.finetuned).file("--out", options.out).check_and_lock();
  const Device device = options.device.select();
  nn::LoadedVit base = options.base.load_model(device);
  nn::LoadedVit finetuned = nn::load_vit(options.finetuned, device, options.base.load);
  peft::ModelDelta delta = peft::make_delta(*base.model, *finetuned.model);
  auto data = finetuned.metadata.find("data");
  if (data != finetuned.metadata.end()) delta.metadata["finetuned_data"] = data->second;
  peft::save_delta(options.out, delta);
  const int64_t total = finetuned.model->parameter_count();
  const int64_t stored = delta.changed_entries() + delta.whole_entries();
  std::printf("export-delta: %lld changed entries in %zu tensors, %lld entries in %zu whole tensors; %lld of %lld "
              "parameters stored (%.3f%%); base backbone hash %s\n",
              (long long)delta.changed_entries(), delta.sparse.size(), (long long)delta.whole_entries(),
              delta.whole.size(), (long long)stored, (long long)total,
              100.0 * double(stored) / double(std::max<int64_t>(1, total)), delta.metadata.at("base_hash").c_str());
  print_wrote("delta", options.out);
}

void run_apply_delta(const ApplyDeltaOptions& options) {
  CommandOutputs outputs(options.output);
  outputs.input(options.base.path).input(options.delta).file("--out", options.out).check_and_lock();
  nn::LoadedVit base = options.base.load_model(options.device.select());
  peft::ModelDelta delta = peft::load_delta(options.delta);
  std::unique_ptr<nn::VisionTransformer> model = peft::apply_delta(*base.model, delta, options.delta);
  std::map<std::string, std::string> metadata;
  auto data = delta.metadata.find("finetuned_data");
  if (data != delta.metadata.end()) metadata["data"] = data->second;
  nn::save_vit(options.out, *model, metadata);
  std::printf("apply-delta: %lld changed entries and %zu whole tensors applied to %s\n",
              (long long)delta.changed_entries(), delta.whole.size(), options.base.path.c_str());
  print_wrote("model", options.out);
}

}  // namespace

void add_delta_command(CLI::App& app) {
  auto export_options = std::make_shared<ExportDeltaOptions>();
  CLI::App* export_command = app.add_subcommand(
      "export-delta", "Store a finetuned model as its changes against the base: the changed entries of each tensor "
                      "(bitwise compare) and, whole, the tensors whose shape differs (the new head)");
  export_command->add_option("--base", export_options->base.path, "The base model the finetuning started from")
      ->required();
  export_command->add_option("--model", export_options->finetuned, "The finetuned model")->required();
  export_command->add_option("--out", export_options->out, "The delta file to write (.safetensors)")->required();
  export_options->base.add_to(*export_command);
  export_options->device.add_to(*export_command);
  export_options->output.add_to(*export_command);
  export_command->callback([export_options] { run_export_delta(*export_options); });

  auto apply_options = std::make_shared<ApplyDeltaOptions>();
  CLI::App* apply_command = app.add_subcommand(
      "apply-delta", "Rebuild a finetuned model from its base and a delta (refuses a delta made for another base)");
  apply_command->add_option("--base", apply_options->base.path, "The base model the delta was made against")
      ->required();
  apply_command->add_option("--delta", apply_options->delta, "The delta file (from export-delta)")->required();
  apply_command->add_option("--out", apply_options->out, "The model file to write (.safetensors)")->required();
  apply_options->base.add_to(*apply_command);
  apply_options->device.add_to(*apply_command);
  apply_options->output.add_to(*apply_command);
  apply_command->callback([apply_options] { run_apply_delta(*apply_options); });
}

}  // namespace vitune::cli
