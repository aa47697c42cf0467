// Building a ViT from a checkpoint's tensors (config inference, shape checks, dtype
// conversion) and saving one in timm's layout.
#include "nn/checkpoint.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>

#include "nn/pos_embed_resample.h"
#include "nn/safetensors.h"

namespace vitune::nn {

const char* layout_name(CheckpointLayout layout) {
  switch (layout) {
    case CheckpointLayout::Timm: return "timm";
    case CheckpointLayout::HuggingFace: return "huggingface";
    case CheckpointLayout::OpenClip: return "open_clip";
    case CheckpointLayout::GoogleNpz: return "google-npz";
  }
  return "?";
}

namespace {

// CLIP towers (norm_pre) use torch's LayerNorm default; Hugging Face ViT its own.
double default_ln_eps(const TimmTensors& t) {
  if (t.layout == CheckpointLayout::HuggingFace) return 1e-12;
  return t.tensors.count("norm_pre.weight") ? 1e-5 : 1e-6;
}

const Tensor& required(const TimmTensors& t, const std::string& name, const std::string& path) {
  auto it = t.tensors.find(name);
  VITUNE_CHECK(it != t.tensors.end(), path, ": missing tensor '", name, "' (", layout_name(t.layout),
               " layout)");
  return it->second;
}

bool is_square(int64_t n) {
  int64_t root = std::llround(std::sqrt(double(std::max<int64_t>(n, 0))));
  return n > 0 && root * root == n;
}

// What the tensor names and shapes tell: sizes, prefix tokens, which optional parts exist.
VitConfig config_from_tensors(const TimmTensors& t, const std::string& path) {
  VitConfig c;
  auto has = [&](const std::string& name) { return t.tensors.count(name) > 0; };
  const Tensor& patch = required(t, "patch_embed.proj.weight", path);
  VITUNE_CHECK(patch.ndim() == 4 && patch.dim(2) == patch.dim(3), path,
               ": patch_embed.proj.weight is ", patch.str(), ", expected [dim, channels, patch, patch]");
  c.dim = int(patch.dim(0));
  c.in_chans = int(patch.dim(1));
  c.patch = int(patch.dim(2));
  c.class_token = has("cls_token");
  c.dist_token = has("dist_token");
  c.reg_tokens = has("reg_token") ? int(t.tensors.at("reg_token").dim(1)) : 0;
  const Tensor& pos = required(t, "pos_embed", path);
  VITUNE_CHECK(pos.ndim() == 3 && pos.dim(0) == 1 && pos.dim(1) >= 1, path, ": pos_embed is ", pos.str(),
               ", expected [1, tokens, dim]");
  // timm's pos_embed covers the prefix tokens unless no_embed_class (DINOv2 with
  // registers, big_vision); a square count of patches tells which.
  const int64_t prefix = c.prefix_tokens();
  c.no_embed_class = !is_square(pos.dim(1) - prefix) && is_square(pos.dim(1));
  VITUNE_CHECK(is_square(pos.dim(1) - prefix) || c.no_embed_class, path, ": pos_embed has ", pos.dim(1),
               " tokens; expected a square number of patches, plus ", prefix,
               " prefix tokens (class, register, distillation) unless the embedding covers the patches only");
  const int64_t patches = c.no_embed_class ? pos.dim(1) : pos.dim(1) - prefix;
  c.img_size = int(std::llround(std::sqrt(double(patches)))) * c.patch;
  c.depth = 0;
  std::regex block(R"(blocks\.(\d+)\..*)");
  std::smatch m;
  for (const auto& [name, tensor] : t.tensors) {
    if (std::regex_match(name, m, block)) c.depth = std::max(c.depth, std::stoi(m[1].str()) + 1);
  }
  if (c.depth > 0) {
    const Tensor& fc1 = required(t, "blocks.0.mlp.fc1.weight", path);
    c.mlp_ratio = double(fc1.dim(0)) / double(c.dim);
    c.qkv_bias = has("blocks.0.attn.qkv.bias");
    c.qk_norm = has("blocks.0.attn.q_norm.weight");
    c.init_values = has("blocks.0.ls1.gamma") ? 1e-5 : 0.0;  // DINOv2's; only a fresh init reads it
  }
  c.pre_norm = has("norm_pre.weight");
  c.fc_norm = has("fc_norm.weight");
  c.global_pool = c.fc_norm || !c.class_token ? "avg" : "token";
  auto head = t.tensors.find("head.weight");
  c.num_classes = head == t.tensors.end() ? 0 : int(head->second.dim(0));
  c.head_bias = has("head.bias") || c.num_classes == 0;
  c.ln_eps = default_ln_eps(t);
  return c;
}

// Fields the tensors cannot tell, from (lowest to highest precedence) the layout, the
// hints, the vit_config metadata and the options; `sources` records where each came from.
VitConfig infer_config(const TimmTensors& t, const std::string& path, const LoadOptions& options,
                       std::map<std::string, std::string>& sources) {
  VitConfig c = config_from_tensors(t, path);
  auto hinted = [&](const char* field) {
    auto it = t.hint_sources.find(field);
    return it == t.hint_sources.end() ? std::string("from the file") : it->second;
  };
  sources["ln_eps"] = std::string("default of the ") + layout_name(t.layout) + " layout";
  sources["act"] = "gelu, the timm default";
  sources["global_pool"] = c.global_pool == "avg" ? "from the tensors (fc_norm or no class token)"
                                                  : "assumed token (avg pooling without fc_norm has the same "
                                                    "tensors: pass --global-pool avg for such a model)";
  if (c.dim % 64 == 0) {
    c.heads = c.dim / 64;
    sources["heads"] = "assumed dim/64 (pass --heads if the model has another head count)";
  } else {
    c.heads = 0;
  }
  if (t.heads_hint > 0) c.heads = t.heads_hint, sources["heads"] = hinted("heads");
  if (!t.act_hint.empty()) c.act = t.act_hint, sources["act"] = hinted("act");
  if (t.ln_eps_hint > 0) c.ln_eps = t.ln_eps_hint, sources["ln_eps"] = hinted("ln_eps");
  if (!t.global_pool_hint.empty()) c.global_pool = t.global_pool_hint, sources["global_pool"] = hinted("global_pool");
  auto meta = t.metadata.find("vit_config");
  if (meta != t.metadata.end()) {
    c = VitConfig::from_json(meta->second, path + " (metadata vit_config)", c);
    const nlohmann::json fields = nlohmann::json::parse(meta->second);  // an object: from_json checked it
    for (const char* field : {"heads", "act", "ln_eps", "global_pool"}) {
      if (fields.contains(field)) sources[field] = "from the vit_config metadata";
    }
    // A vit_config written before act and global_pool existed is from a model that
    // could only be gelu with token pooling.
    for (const char* field : {"act", "global_pool"}) {
      if (!fields.contains(field)) sources[field] = "vitune's only choice when its vit_config metadata was written";
    }
  }
  if (options.heads > 0) c.heads = options.heads, sources["heads"] = "from --heads";
  if (options.ln_eps > 0) c.ln_eps = options.ln_eps, sources["ln_eps"] = "from --ln-eps";
  if (!options.act.empty()) c.act = options.act, sources["act"] = "from --act";
  if (!options.global_pool.empty()) c.global_pool = options.global_pool, sources["global_pool"] = "from --global-pool";
  VITUNE_CHECK(c.heads > 0, path, ": the number of heads cannot be told from the tensors (dim ", c.dim,
               " is not a multiple of 64) and neither the vit_config metadata nor a config.json beside the ",
               "file gives it: pass --heads");
  VITUNE_CHECK(t.layout != CheckpointLayout::OpenClip || sources["act"].rfind("gelu, the", 0) != 0, path,
               ": open_clip and OpenAI CLIP checkpoints do not record their activation: pass --act quick_gelu ",
               "(OpenAI weights and open_clip's *-quickgelu models) or --act gelu (other open_clip models)");
  VITUNE_CHECK(t.img_size_hint == 0 || t.img_size_hint == c.img_size, path, ": pos_embed holds a ",
               c.grid(), "x", c.grid(), " grid (image size ", c.img_size, ") but ", hinted("image_size"),
               " says image_size ", t.img_size_hint);
  VITUNE_CHECK(t.patch_hint == 0 || t.patch_hint == c.patch, path, ": the patch kernel is ", c.patch, "x", c.patch,
               " but config.json says patch_size ", t.patch_hint);
  c.validate(path);
  return c;
}

}  // namespace

LoadedVit load_vit(const std::string& path, Device device, const LoadOptions& options) {
  TimmTensors t = read_as_timm(path);
  LoadedVit loaded;
  VitConfig config = infer_config(t, path, options, loaded.sources);
  if (options.img_size > 0 && options.img_size != config.img_size) {
    VITUNE_CHECK(options.img_size % config.patch == 0 && options.img_size <= 16384, path, ": --img-size ",
                 options.img_size, " must be a multiple of the patch size ", config.patch, " up to 16384");
    const int new_grid = options.img_size / config.patch;
    loaded.sources["img_size"] = std::string("from --img-size: pos_embed resampled (bicubic") +
                                 (options.antialias ? ", antialiased" : "") + ") from " +
                                 std::to_string(config.grid()) + "x" + std::to_string(config.grid()) + " to " +
                                 std::to_string(new_grid) + "x" + std::to_string(new_grid);
    t.tensors["pos_embed"] =
        resample_pos_embed(t.tensors.at("pos_embed"), config.no_embed_class ? 0 : config.prefix_tokens(), new_grid,
                           options.antialias);
    config.img_size = options.img_size;
  }
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
