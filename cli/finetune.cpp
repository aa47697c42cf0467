// `vitune finetune`: trains a pretrained ViT on a task with a fresh head, in one of four
// ways: every parameter (full), chosen components (--train), the entries a selection
// mask names (--mask), or LoRA adapters (--lora), merged into the weights on save.
#include <set>
#include <sstream>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/model_options.h"
#include "cli/training_run.h"
#include "data/dataset_spec.h"
#include "data/open_dataset.h"
#include "nn/components.h"
#include "nn/lora.h"
#include "peft/mask_file.h"

namespace vitune::cli {

namespace {

struct FinetuneOptions {
  ModelOptions model;
  RunOptions run;
  std::string train = "all";
  std::string mask;
  int lora_rank = 0;
  std::string lora_targets = "qkv";
  double lora_alpha = 0;  // used when given; otherwise alpha is the rank
  // Which of the exclusive flags the command line gave.
  bool train_given = false, lora_targets_given = false, lora_alpha_given = false;
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

void check_flag_combination(const FinetuneOptions& options) {
  const bool lora = options.lora_rank != 0;
  VITUNE_CHECK(options.mask.empty() || !options.train_given,
               "finetune: --mask and --train exclude each other (the mask decides what trains)");
  VITUNE_CHECK(options.mask.empty() || !lora, "finetune: --mask and --lora exclude each other; choose one method");
  VITUNE_CHECK(!lora || !options.train_given,
               "finetune: --lora and --train exclude each other (LoRA trains its adapters and the head)");
  VITUNE_CHECK(lora || (!options.lora_targets_given && !options.lora_alpha_given),
               "finetune: --lora-targets and --lora-alpha need --lora RANK");
  VITUNE_CHECK(options.lora_rank >= 0, "--lora: the rank must be positive, got ", options.lora_rank);
}

// Sets the freeze states for the chosen method; returns the results fields describing it.
nlohmann::ordered_json set_trainable(const FinetuneOptions& options, nn::VisionTransformer& model) {
  if (!options.mask.empty()) {
    peft::SelectionMask mask = peft::load_mask(options.mask);
    peft::apply_mask(model, mask, options.mask);
    for (nn::Parameter* p : model.parameters()) {
      if (nn::component_of(p->name()) == nn::Component::Head) p->train();
    }
    nlohmann::ordered_json metadata(mask.metadata);
    return {{"method", "mask"}, {"mask", options.mask}, {"mask_selected_entries", mask.selected_count()},
            {"mask_metadata", metadata}};
  }
  if (options.lora_rank > 0) {
    nn::LoraOptions lora;
    lora.rank = options.lora_rank;
    lora.alpha = options.lora_alpha_given ? options.lora_alpha : double(options.lora_rank);
    lora.targets = nn::parse_lora_targets(options.lora_targets, "--lora-targets");
    lora.seed = options.run.output.seed;
    model.add_lora(lora);
    std::string targets;
    for (nn::LoraTarget t : lora.targets) targets += (targets.empty() ? "" : ",") + std::string(nn::lora_target_name(t));
    return {{"method", "lora"}, {"lora_rank", lora.rank}, {"lora_alpha", lora.alpha}, {"lora_targets", targets}};
  }
  std::set<nn::Component> trained = trained_components(options.train);
  for (nn::Parameter* p : model.parameters()) {
    if (!trained.count(nn::component_of(p->name()))) p->freeze();
  }
  std::string components;
  for (nn::Component c : trained) components += (components.empty() ? "" : ",") + std::string(nn::component_name(c));
  const bool full = trained.size() == nn::all_components().size();
  return {{"method", full ? "full" : "components"}, {"trained_components", components}};
}

void run_finetune(const FinetuneOptions& options) {
  check_flag_combination(options);
  const CommandOutputs outputs = check_training_outputs(options.run, {options.model.path, options.mask});
  nn::LoadedVit loaded = options.model.load_pooled_model(options.run.device.select(), "finetune");
  nn::VisionTransformer& model = *loaded.model;
  int classes = data::open_dataset(data::parse_dataset_spec(options.run.data.train_spec))->num_classes();
  model.reset_head(classes, options.run.output.seed);
  nlohmann::ordered_json results = {{"command", "finetune"}, {"base_model", options.model.path}};
  results.update(set_trainable(options, model));
  train_and_report("finetune", model, options.run.data.preprocess.input_for(loaded), options.run, results);
}

}  // namespace

void add_finetune_command(CLI::App& app) {
  auto options = std::make_shared<FinetuneOptions>();
  CLI::App* command = app.add_subcommand(
      "finetune", "Finetune a pretrained ViT on a task with a fresh head: all parameters, chosen components, "
                  "the entries of a selection mask, or LoRA adapters");
  command->add_option("--model", options->model.path, "Pretrained checkpoint (timm/Hugging Face .safetensors, .npz)")
      ->required();
  options->model.add_to(*command);
  CLI::Option* train =
      command->add_option("--train", options->train,
                          "Components to train: all, head, or a comma list of emb, ln1, mha, ln2, fc1, fc2, norm, head "
                          "(the head is always trained)")
          ->capture_default_str();
  command->add_option("--mask", options->mask,
                      "Selection mask (from `vitune select`): train exactly its selected entries, the tensors it "
                      "trains in full, and the head; excludes --train and --lora");
  command->add_option("--lora", options->lora_rank,
                      "LoRA rank R: train rank-R adapters on the blocks' linear layers and the head, everything else "
                      "frozen; merged into the weights when the model is saved")
      ->check(integer_from(0));
  CLI::Option* targets = command->add_option("--lora-targets", options->lora_targets,
                                              "Layers that get adapters: a comma list of qkv, proj, fc1, fc2")
                             ->capture_default_str();
  CLI::Option* alpha = command->add_option(
      "--lora-alpha", options->lora_alpha, "LoRA alpha: the update is scaled by alpha / R (default: R, a scale of 1)")
                            ->check(positive_number());
  options->run.data.add_to(*command, true);
  options->run.optim.add_to(*command);
  options->run.output.add_to(*command, true);
  options->run.device.add_to(*command);
  options->run.add_bf16_flag(*command);
  command->callback([options, train, targets, alpha] {
    options->train_given = train->count() > 0;
    options->lora_targets_given = targets->count() > 0;
    options->lora_alpha_given = alpha->count() > 0;
    run_finetune(*options);
  });
}

}  // namespace vitune::cli
