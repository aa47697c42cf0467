// `vitune pretrain`: trains a ViT from scratch, its shape given by flags.
#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/training_run.h"
#include "data/dataset_spec.h"
#include "data/open_dataset.h"

namespace vitune::cli {

namespace {

struct PretrainOptions {
  RunOptions run;
  nn::VitConfig model;
};

void run_pretrain(PretrainOptions options) {
  const CommandOutputs outputs = check_training_outputs(options.run, {});
  nn::VitConfig& config = options.model;
  if (config.num_classes == 0) {
    config.num_classes = data::open_dataset(data::parse_dataset_spec(options.run.data.train_spec))->num_classes();
  }
  config.validate("model flags");
  nn::VisionTransformer model(config, options.run.device.select());
  model.init_weights(options.run.output.seed);
  train_and_report("pretrain", model, options.run.data.preprocess.input_for(config), options.run,
                   {{"command", "pretrain"}});
}

}  // namespace

void add_pretrain_command(CLI::App& app) {
  auto options = std::make_shared<PretrainOptions>();
  nn::VitConfig& c = options->model;
  c = nn::VitConfig{28, 4, 1, 128, 6, 4, 4.0, 0, 1e-6};
  CLI::App* command = app.add_subcommand("pretrain", "Train a ViT from scratch (shape from flags)");
  command->add_option("--img-size", c.img_size, "Input height and width")
      ->check(integer_from(1))
      ->capture_default_str();
  command->add_option("--patch", c.patch, "Patch size")->check(integer_from(1))->capture_default_str();
  command->add_option("--in-chans", c.in_chans, "Input channels")->check(integer_from(1))->capture_default_str();
  command->add_option("--dim", c.dim, "Embedding width")->check(integer_from(1))->capture_default_str();
  command->add_option("--depth", c.depth, "Blocks")->check(integer_from(1))->capture_default_str();
  command->add_option("--heads", c.heads, "Attention heads")->check(integer_from(1))->capture_default_str();
  command->add_option("--mlp-ratio", c.mlp_ratio, "MLP hidden width over dim")
      ->check(positive_number())
      ->capture_default_str();
  command->add_option("--classes", c.num_classes, "Classes (default: from the training data)")->check(integer_from(0));
  command->add_option("--ln-eps", c.ln_eps, "LayerNorm epsilon")->check(positive_number())->capture_default_str();
  options->run.data.add_to(*command, true);
  options->run.optim.add_to(*command);
  options->run.output.add_to(*command, true);
  options->run.device.add_to(*command);
  options->run.add_bf16_flag(*command);
  command->callback([options] { run_pretrain(*options); });
}

}  // namespace vitune::cli
