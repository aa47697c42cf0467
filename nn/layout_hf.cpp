// Hugging Face ViT / ViTModel, DeiT (DeiTForImageClassification(WithTeacher)), Dinov2Model
// and CLIPVisionModel(WithProjection) tensors renamed into timm's layout; config.json beside the weights is read by read_as_timm.
#include "nn/layout_util.h"

namespace vitune::nn::layout {

namespace {

// The Hugging Face names of one block's tensors, relative to its layer prefix.
struct HfBlockNames {
  const char* norm1;
  const char* query;
  const char* key;
  const char* value;
  const char* out;
  const char* norm2;
  const char* fc1;
  const char* fc2;
  const char* ls1;  // nullptr: the family has no LayerScale
  const char* ls2;
};

constexpr HfBlockNames kVitNames = {"layernorm_before", "attention.attention.query", "attention.attention.key",
                                    "attention.attention.value", "attention.output.dense", "layernorm_after",
                                    "intermediate.dense", "output.dense", nullptr, nullptr};
constexpr HfBlockNames kDinov2Names = {"norm1", "attention.attention.query", "attention.attention.key",
                                       "attention.attention.value", "attention.output.dense", "norm2",
                                       "mlp.fc1", "mlp.fc2", "layer_scale1.lambda1", "layer_scale2.lambda1"};
constexpr HfBlockNames kClipNames = {"layer_norm1", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                     "self_attn.out_proj", "layer_norm2", "mlp.fc1", "mlp.fc2", nullptr, nullptr};

void convert_blocks(std::map<std::string, Tensor>& pool, TimmTensors& out, const std::string& layers,
                    const HfBlockNames& n, const std::string& path) {
  auto& t = out.tensors;
  std::string pattern = std::regex_replace(layers, std::regex(R"(\.)"), R"(\.)") + R"(\.(\d+)\..*)";
  int depth = block_count(pool, std::regex(pattern));
  for (int i = 0; i < depth; ++i) {
    std::string hf = layers + "." + std::to_string(i) + ".";
    std::string timm = "blocks." + std::to_string(i) + ".";
    for (std::string k : {"weight", "bias"}) {
      auto move = [&](const char* from, const std::string& to) { t[timm + to + "." + k] = take(pool, hf + from + "." + k, path); };
      move(n.norm1, "norm1");
      t[timm + "attn.qkv." + k] = stacked_rows({take(pool, hf + n.query + "." + k, path),
                                                take(pool, hf + n.key + "." + k, path),
                                                take(pool, hf + n.value + "." + k, path)});
      move(n.out, "attn.proj");
      move(n.norm2, "norm2");
      move(n.fc1, "mlp.fc1");
      move(n.fc2, "mlp.fc2");
    }
    if (n.ls1) {
      t[timm + "ls1.gamma"] = take(pool, hf + n.ls1, path);
      t[timm + "ls2.gamma"] = take(pool, hf + n.ls2, path);
    }
  }
}

void drop_prefixed(std::map<std::string, Tensor>& pool, const std::vector<std::string>& prefixes) {
  for (auto it = pool.begin(); it != pool.end();) {
    bool drop = false;
    for (const std::string& p : prefixes) drop = drop || it->first.rfind(p, 0) == 0;
    it = drop ? pool.erase(it) : std::next(it);
  }
}

// CLIP keeps the class token as [D] and the position embedding as [N, D].
Tensor with_batch_axes(const Tensor& t, int missing) {
  Shape shape = t.shape();
  shape.insert(shape.begin(), size_t(missing), 1);
  return t.reshape(shape);
}

void from_clip_vision(std::map<std::string, Tensor>& pool, TimmTensors& out, const std::string& path) {
  const std::string v = "vision_model.";
  auto& t = out.tensors;
  t["cls_token"] = with_batch_axes(take(pool, v + "embeddings.class_embedding", path), 2);
  t["pos_embed"] = with_batch_axes(take(pool, v + "embeddings.position_embedding.weight", path), 1);
  t["patch_embed.proj.weight"] = take(pool, v + "embeddings.patch_embedding.weight", path);
  // position_ids is a buffer some exports keep.
  pool.erase(v + "embeddings.position_ids");
  for (std::string k : {"weight", "bias"}) {
    t["norm_pre." + k] = take(pool, v + "pre_layrnorm." + k, path);
    t["norm." + k] = take(pool, v + "post_layernorm." + k, path);
  }
  convert_blocks(pool, out, v + "encoder.layers", kClipNames, path);
  move_if_present(pool, "visual_projection.weight", t, "head.weight");
}

}  // namespace

TimmTensors from_hugging_face(std::map<std::string, Tensor> pool, const std::string& path) {
  TimmTensors out;
  out.layout = CheckpointLayout::HuggingFace;
  // ViTModel and DeiTModel carry a pooler and Dinov2 a mask token that image
  // classification does not use.
  drop_prefixed(pool, {"vit.pooler.", "deit.pooler.", "pooler.", "embeddings.mask_token"});
  if (pool.count("vision_model.embeddings.class_embedding")) {
    from_clip_vision(pool, out, path);
  } else {
    std::string p;
    for (const char* model : {"vit.", "deit."}) {
      if (pool.count(std::string(model) + "embeddings.cls_token")) p = model;
    }
    auto& t = out.tensors;
    auto move = [&](const std::string& from, const std::string& to) { t[to] = take(pool, from, path); };
    move(p + "embeddings.cls_token", "cls_token");
    // DeiTForImageClassification reads the class token only: its distillation token is
    // attended to and then unused, which is what timm's ViT computes with one register
    // (reg_tokens=1; timm's distilled model always has head_dist).
    const bool class_token_head_only = pool.count("classifier.weight") && !pool.count("cls_classifier.weight");
    move_if_present(pool, p + "embeddings.distillation_token", t, class_token_head_only ? "reg_token" : "dist_token");
    move(p + "embeddings.position_embeddings", "pos_embed");
    move(p + "embeddings.patch_embeddings.projection.weight", "patch_embed.proj.weight");
    move(p + "embeddings.patch_embeddings.projection.bias", "patch_embed.proj.bias");
    bool dinov2 = pool.count(p + "encoder.layer.0.norm1.weight") > 0;
    convert_blocks(pool, out, p + "encoder.layer", dinov2 ? kDinov2Names : kVitNames, path);
    move(p + "layernorm.weight", "norm.weight");
    move(p + "layernorm.bias", "norm.bias");
    if (move_if_present(pool, "classifier.weight", t, "head.weight")) move("classifier.bias", "head.bias");
    // DeiT with teacher: logits are the mean of the class and distillation heads, as timm's head and head_dist.
    if (move_if_present(pool, "cls_classifier.weight", t, "head.weight")) move("cls_classifier.bias", "head.bias");
    if (move_if_present(pool, "distillation_classifier.weight", t, "head_dist.weight")) {
      move("distillation_classifier.bias", "head_dist.bias");
    }
  }
  VITUNE_CHECK(pool.empty(), path, ": tensors not part of a Hugging Face ViT, DeiT, Dinov2 or CLIP vision model: ",
               leftover_list(pool));
  return out;
}

}  // namespace vitune::nn::layout
