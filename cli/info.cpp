// `vitune info MODEL`: a checkpoint's layout, config, dtypes and parameter count per
// component, and what this build of the engine can run on.
#include <cstdio>
#include <map>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "engine/devices.h"
#include "engine/parallel.h"
#include "nn/components.h"
#include "nn/preprocessing.h"

namespace vitune::cli {

namespace {

std::string joined(const std::vector<float>& values) {
  std::string out;
  for (float v : values) out += (out.empty() ? "" : ",") + cat(v);
  return out;
}

// The preprocessing the commands feed the model with (before any flag), and where each
// value came from.
void print_preprocessing(const nn::LoadedVit& loaded) {
  const nn::ModelPreprocessing pre = nn::read_preprocessing(loaded);
  const data::Preprocessing& p = pre.values;
  std::printf("preprocess  mean %s, std %s, crop_pct %g, crop_mode %s, interpolation %s\n",
              joined(p.normalization.mean).c_str(), joined(p.normalization.std).c_str(), p.crop_pct,
              data::crop_mode_name(p.crop_mode), data::interpolation_name(p.interpolation));
  for (const auto& [field, source] : pre.sources) std::printf("%-11s %s\n", field.c_str(), source.c_str());
}

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

void print_info(const ModelOptions& options) {
  // info reads the model only: it is built on the host.
  nn::LoadedVit loaded = options.load_model(Device::cpu());
  const nn::VisionTransformer& model = *loaded.model;
  const nn::VitConfig& c = model.config();
  std::printf("file        %s\n", loaded.path.c_str());
  std::printf("layout      %s\n", nn::layout_name(loaded.layout));
  std::printf("config      img_size %d, patch %d, in_chans %d, dim %d, depth %d, heads %d, "
              "mlp_ratio %g, num_classes %d, ln_eps %g\n",
              c.img_size, c.patch, c.in_chans, c.dim, c.depth, c.heads, c.mlp_ratio, c.num_classes,
              c.ln_eps);
  std::printf("family      class_token %s, reg_tokens %d, dist_token %s, global_pool %s, fc_norm %s, qkv_bias %s, "
              "layer_scale %s, pre_norm %s, act %s, head_bias %s, qk_norm %s\n",
              c.class_token ? "yes" : "no", c.reg_tokens, c.dist_token ? "yes" : "no", c.global_pool.c_str(),
              c.fc_norm ? "yes" : "no", c.qkv_bias ? "yes" : "no", c.init_values > 0 ? "yes" : "no",
              c.pre_norm ? "yes" : "no", c.act.c_str(), c.head_bias ? "yes" : "no", c.qk_norm ? "yes" : "no");
  for (const auto& [field, source] : loaded.sources) std::printf("%-11s %s\n", field.c_str(), source.c_str());
  std::printf("tokens      %d (%d patches of %dx%d + %d prefix)\n", c.tokens(), c.num_patches(), c.patch, c.patch,
              c.prefix_tokens());
  print_preprocessing(loaded);
  std::map<std::string, int> dtype_counts;
  for (const auto& [name, dtype] : loaded.stored_dtypes) ++dtype_counts[dtype_name(dtype)];
  std::string dtypes;
  for (const auto& [name, count] : dtype_counts) {
    dtypes += (dtypes.empty() ? "" : ", ") + name + " (" + std::to_string(count) + " tensors)";
  }
  std::printf("stored as   %s; computed in f32\n", dtypes.c_str());
  std::map<nn::Component, int64_t> per_component;
  for (const nn::Parameter* p : model.parameters()) per_component[nn::component_of(p->name())] += p->numel();
  int64_t total = model.parameter_count();
  std::printf("\n%-10s %14s %8s\n", "component", "parameters", "share");
  for (nn::Component comp : nn::all_components()) {
    int64_t n = per_component[comp];
    std::printf("%-10s %14s %7.2f%%\n", nn::component_name(comp), with_commas(n).c_str(),
                total ? 100.0 * double(n) / double(total) : 0.0);
  }
  std::printf("%-10s %14s %7.2f%%\n", "total", with_commas(total).c_str(), 100.0);
  int gpus = cuda::device_count();
  std::printf("\nengine      %d threads, fp32 GEMM by %s, CUDA %s\n", num_threads(), cpu::gemm_kernel_name().c_str(),
              !cuda::built_with_cuda() ? "not built" : gpus == 0 ? "built, no device" : cuda::device_description(0).c_str());
}

}  // namespace

void add_info_command(CLI::App& app) {
  auto options = std::make_shared<ModelOptions>();
  CLI::App* command = app.add_subcommand("info", "Show a checkpoint's layout, config and parameters per component");
  command->add_option("model", options->path, "Checkpoint: timm, Hugging Face or open_clip .safetensors, or Google / big_vision .npz")
      ->required();
  options->add_to(*command);
  command->callback([options] { print_info(*options); });
}

}  // namespace vitune::cli
