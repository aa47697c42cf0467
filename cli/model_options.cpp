// Registration of the shared model-loading flags, and the check of commands that need pooling.
#include "cli/flag_checks.h"
#include "cli/model_options.h"

namespace vitune::cli {

void ModelOptions::add_to(CLI::App& command) {
  command.add_option("--heads", load.heads,
                     "Attention heads, when neither the checkpoint's vit_config metadata, config.json "
                     "beside it nor its tensors tell (default: from those, else dim/64 when dim is a "
                     "multiple of 64; `info` says which)")
      ->check(integer_from(1));
  command.add_option("--ln-eps", load.ln_eps,
                     "LayerNorm epsilon (default: metadata or config.json, else timm 1e-6 (1e-5 with "
                     "norm_pre), Hugging Face 1e-12, open_clip 1e-5, npz 1e-6)")
      ->check(positive_number());
  command.add_option("--global-pool", load.global_pool,
                     "Pooling: token or avg, also for a model saved without pooling (global_pool none: an "
                     "output per token), as timm's reset_classifier(num_classes, global_pool=...) (default: "
                     "metadata or config.json, else avg when the file has fc_norm or no class token, else "
                     "token; avg without fc_norm needs this flag)")
      ->check(CLI::IsMember({"token", "avg"}));
  command.add_option("--act", load.act,
                     "MLP activation: gelu or quick_gelu (default: metadata or config.json, else gelu; "
                     "required for open_clip / OpenAI CLIP files)")
      ->check(CLI::IsMember({"gelu", "quick_gelu"}));
  command.add_option("--img-size", load.img_size,
                     "Run the model at this image size: the position embedding is resampled (bicubic, antialiased, prefix "
                     "tokens kept, as timm's resample_abs_pos_embed) (default: the checkpoint's size)")
      ->check(integer_from(1));
}

nn::LoadedVit ModelOptions::load_pooled_model(Device device, const std::string& command) const {
  nn::LoadedVit loaded = load_model(device);
  require_pooled(loaded, command);
  return loaded;
}

void require_pooled(const nn::LoadedVit& loaded, const std::string& command) {
  VITUNE_CHECK(loaded.model->config().global_pool != "none", loaded.path,
               ": the model has no pooling (global_pool none, ", loaded.sources.at("global_pool"),
               "): it gives an output per token, and `vitune ", command,
               "` needs one prediction per image; pass --global-pool token|avg to pool the tokens, as timm's ",
               "reset_classifier(num_classes, global_pool=...) does");
}

}  // namespace vitune::cli
