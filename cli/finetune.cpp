// `vitune finetune`: trains a pretrained ViT on a task with a fresh head and any set of
// components frozen.
#include <set>
#include <sstream>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "cli/training_run.h"
#include "data/dataset_spec.h"
#include "data/open_dataset.h"
#include "nn/components.h"

namespace vitune::cli {

namespace {

struct FinetuneOptions {
  ModelOptions model;
  RunOptions run;
  std::string train = "all";
};

// "all", "head", or a comma list of emb, ln1, mha, ln2, fc1, fc2, norm, head. The head
// is always trained.
std::set<nn::Component> trained_components(const std::string& text) {
  std::set<nn::Component> out{nn::Component::Head};
  if (text == "all") {
    for (nn::Component c : nn::all_components()) out.insert(c);
    return out;
  }
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) {
    bool known = false;
    for (nn::Component c : nn::all_components()) {
      if (item == nn::component_name(c)) {
        out.insert(c);
        known = true;
      }
    }
    VITUNE_CHECK(known, "--train: unknown component '", item,
                 "'; expected all, head, or a comma list of emb, ln1, mha, ln2, fc1, fc2, norm, head");
  }
  return out;
}

void run_finetune(const FinetuneOptions& options) {
  std::set<nn::Component> trained = trained_components(options.train);
  nn::LoadedVit loaded = options.model.load_model();
  nn::VisionTransformer& model = *loaded.model;
  int classes = data::open_dataset(data::parse_dataset_spec(options.run.data.train_spec))->num_classes();
  model.reset_head(classes, options.run.output.seed);
  for (nn::Parameter* p : model.parameters()) {
    if (!trained.count(nn::component_of(p->name()))) p->freeze();
  }
  std::string components;
  for (nn::Component c : trained) components += (components.empty() ? "" : ",") + std::string(nn::component_name(c));
  train_and_report("finetune", model, options.run,
                   {{"command", "finetune"}, {"base_model", options.model.path}, {"trained_components", components}});
}

}  // namespace

void add_finetune_command(CLI::App& app) {
  auto options = std::make_shared<FinetuneOptions>();
  CLI::App* command =
      app.add_subcommand("finetune", "Finetune a pretrained ViT on a task, with a fresh head and chosen components");
  command->add_option("--model", options->model.path, "Pretrained checkpoint (timm/Hugging Face .safetensors, .npz)")
      ->required();
  options->model.add_to(*command);
  command->add_option("--train", options->train,
                      "Components to train: all, head, or a comma list of emb, ln1, mha, ln2, fc1, fc2, norm, head "
                      "(the head is always trained)")
      ->capture_default_str();
  options->run.data.add_to(*command, true);
  options->run.optim.add_to(*command);
  options->run.output.add_to(*command, true);
  command->callback([options] { run_finetune(*options); });
}

}  // namespace vitune::cli
