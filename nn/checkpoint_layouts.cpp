// Telling a checkpoint's layout from its file name and tensor names, and reading it as
// timm tensors with the hints of config.json beside it.
#include "nn/config_json.h"
#include "nn/layout_util.h"
#include "nn/npz.h"
#include "nn/safetensors.h"

namespace vitune::nn {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

TimmTensors from_safetensors(const SafetensorsFile& file, const std::string& path) {
  const auto& names = file.tensors;
  if (names.count("vit.embeddings.cls_token") || names.count("deit.embeddings.cls_token") ||
      names.count("embeddings.cls_token") || names.count("vision_model.embeddings.class_embedding")) {
    return layout::from_hugging_face(file.tensors, path);
  }
  if (names.count("visual.class_embedding") || names.count("class_embedding")) {
    return layout::from_open_clip(file.tensors, path);
  }
  VITUNE_CHECK(names.count("patch_embed.proj.weight") && names.count("pos_embed"), path,
               ": not a ViT checkpoint in a known layout (expected timm's patch_embed.proj.weight and ",
               "pos_embed, Hugging Face's [vit.|deit.]embeddings.* or vision_model.embeddings.*, or open_clip's ",
               "[visual.]class_embedding)");
  TimmTensors out;
  out.tensors = file.tensors;
  if (file.metadata.count("trainer_state")) {
    // A training checkpoint: its optimizer state is not part of the model.
    for (auto it = out.tensors.begin(); it != out.tensors.end();) {
      it = it->first.rfind("optim.", 0) == 0 ? out.tensors.erase(it) : std::next(it);
    }
  }
  return out;
}

}  // namespace

TimmTensors read_as_timm(const std::string& path) {
  TimmTensors out;
  if (ends_with(path, ".npz")) {
    out = layout::from_big_vision(read_npz(path).arrays, path);
  } else {
    SafetensorsFile file = read_safetensors(path);
    out = from_safetensors(file, path);
    out.metadata = file.metadata;
  }
  if (out.heads_hint > 0) out.hint_sources["heads"] = "from the npz attention kernels";
  ConfigJson config = read_config_json_beside(path);
  const std::string from = "from " + config.path;
  auto hint = [&](const char* field, bool given) {
    if (given) out.hint_sources[field] = from;
    return given;
  };
  if (hint("heads", config.heads > 0)) out.heads_hint = config.heads;
  if (hint("act", !config.act.empty())) out.act_hint = config.act;
  if (hint("ln_eps", config.ln_eps > 0)) out.ln_eps_hint = config.ln_eps;
  if (hint("global_pool", !config.global_pool.empty())) out.global_pool_hint = config.global_pool;
  out.img_size_hint = config.image_size;
  out.patch_hint = config.patch_size;
  return out;
}

}  // namespace vitune::nn
