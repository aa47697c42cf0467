// Building a ViT from a checkpoint's tensors (config inference, shape checks, dtype
// conversion) and saving one in timm's layout.
#include "nn/checkpoint.h"

#include <cmath>
#include <regex>

#include "nn/safetensors.h"

namespace vitune::nn {

const char* layout_name(CheckpointLayout layout) {
  switch (layout) {
    case CheckpointLayout::Timm: return "timm";
    case CheckpointLayout::HuggingFace: return "huggingface";
    case CheckpointLayout::GoogleNpz: return "google-npz";
  }
  return "?";
}

namespace {

double default_ln_eps(CheckpointLayout layout) {
  return layout == CheckpointLayout::HuggingFace ? 1e-12 : 1e-6;
}

const Tensor& required(const TimmTensors& t, const std::string& name, const std::string& path) {
  auto it = t.tensors.find(name);
  VITUNE_CHECK(it != t.tensors.end(), path, ": missing tensor '", name, "' (", layout_name(t.layout),
               " layout)");
  return it->second;
}

VitConfig infer_config(const TimmTensors& t, const std::string& path, const LoadOptions& options) {
  VitConfig c;
  const Tensor& patch = required(t, "patch_embed.proj.weight", path);
  VITUNE_CHECK(patch.ndim() == 4 && patch.dim(2) == patch.dim(3), path,
               ": patch_embed.proj.weight is ", patch.str(), ", expected [dim, channels, patch, patch]");
  c.dim = int(patch.dim(0));
  c.in_chans = int(patch.dim(1));
  c.patch = int(patch.dim(2));
  const Tensor& pos = required(t, "pos_embed", path);
  VITUNE_CHECK(pos.ndim() == 3 && pos.dim(0) == 1 && pos.dim(1) >= 2, path, ": pos_embed is ",
               pos.str(), ", expected [1, tokens, dim]");
  int64_t grid = std::llround(std::sqrt(double(pos.dim(1) - 1)));
  VITUNE_CHECK(grid * grid == pos.dim(1) - 1, path, ": pos_embed has ", pos.dim(1),
               " tokens; expected 1 + a square number of patches (square images)");
  c.img_size = int(grid) * c.patch;
  c.depth = 0;
  std::regex block(R"(blocks\.(\d+)\..*)");
  std::smatch m;
  for (const auto& [name, tensor] : t.tensors) {
    if (std::regex_match(name, m, block)) c.depth = std::max(c.depth, std::stoi(m[1].str()) + 1);
  }
  if (c.depth > 0) {
    const Tensor& fc1 = required(t, "blocks.0.mlp.fc1.weight", path);
    c.mlp_ratio = double(fc1.dim(0)) / double(c.dim);
  }
  auto head = t.tensors.find("head.weight");
  c.num_classes = head == t.tensors.end() ? 0 : int(head->second.dim(0));
  c.ln_eps = default_ln_eps(t.layout);
  c.heads = t.heads_hint > 0 ? t.heads_hint : (c.dim % 64 == 0 ? c.dim / 64 : 0);
  auto meta = t.metadata.find("vit_config");
  if (meta != t.metadata.end()) c = VitConfig::from_json(meta->second, path + " (metadata vit_config)", c);
  if (options.heads > 0) c.heads = options.heads;
  if (options.ln_eps > 0) c.ln_eps = options.ln_eps;
  VITUNE_CHECK(c.heads > 0, path, ": the number of heads cannot be told from the tensors (dim ", c.dim,
               " is not a multiple of 64) and no vit_config metadata gives it: pass --heads");
  c.validate(path);
  return c;
}

}  // namespace

LoadedVit load_vit(const std::string& path, Device device, const LoadOptions& options) {
  TimmTensors t = read_as_timm(path);
  VitConfig config = infer_config(t, path, options);
  LoadedVit loaded;
  loaded.model = std::make_unique<VisionTransformer>(config, device);
  loaded.layout = t.layout;
  loaded.path = path;
  loaded.metadata = t.metadata;
  std::string problems;
  for (Parameter* p : loaded.model->parameters()) {
    auto it = t.tensors.find(p->name());
    if (it == t.tensors.end()) {
      problems += "\n  missing " + p->name() + " " + shape_str(p->shape());
      continue;
    }
    const Tensor& stored = it->second;
    if (stored.shape() != p->shape()) {
      problems += "\n  " + p->name() + " is " + shape_str(stored.shape()) + ", expected " + shape_str(p->shape());
    } else {
      VITUNE_CHECK(stored.dtype() != DType::I32 && stored.dtype() != DType::I64 && stored.dtype() != DType::U8,
                   path, ": tensor '", p->name(), "' has integer dtype ", dtype_name(stored.dtype()),
                   ", expected a float dtype");
      p->mutable_value().copy_from(stored.to(DType::F32));
      loaded.stored_dtypes[p->name()] = stored.dtype();
    }
    t.tensors.erase(it);
  }
  for (const auto& [name, tensor] : t.tensors) problems += "\n  unexpected " + name + " " + tensor.str();
  VITUNE_CHECK(problems.empty(), path, ": tensors do not match a ViT with config ", config.to_json(), ":",
               problems);
  return loaded;
}

void save_vit(const std::string& path, const VisionTransformer& model,
              const std::map<std::string, std::string>& extra_metadata) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const Parameter* p : model.parameters()) tensors.emplace_back(p->name(), p->value());
  std::map<std::string, std::string> metadata = extra_metadata;
  metadata["vit_config"] = model.config().to_json();
  metadata["format"] = "pt";
  write_safetensors(path, tensors, metadata);
}

}  // namespace vitune::nn
