// Registration of the shared model-loading flags.
#include "cli/flag_checks.h"
#include "cli/model_options.h"

namespace vitune::cli {

void ModelOptions::add_to(CLI::App& command) {
  command.add_option("--heads", load.heads,
                     "Attention heads, when neither the checkpoint's vit_config metadata nor its "
                     "tensors tell (default: from the metadata, npz kernels, or dim/64)")
      ->check(integer_from(1));
  command.add_option("--ln-eps", load.ln_eps,
                     "LayerNorm epsilon (default: metadata, else timm 1e-6, Hugging Face 1e-12, npz 1e-6)")
      ->check(positive_number());
}

}  // namespace vitune::cli
