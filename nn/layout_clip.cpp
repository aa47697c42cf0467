// open_clip and OpenAI CLIP visual towers (visual.conv1, visual.class_embedding,
// visual.transformer.resblocks.N.attn.in_proj_weight, ..., visual.proj) renamed into
// timm's layout as a CLIP port: norm_pre (ln_pre), a bias-free head (proj^T). A whole
// CLIP model's text tower is left out.
#include "nn/layout_util.h"

namespace vitune::nn::layout {

TimmTensors from_open_clip(std::map<std::string, Tensor> pool, const std::string& path) {
  const std::string v = pool.count("visual.class_embedding") ? "visual." : "";
  if (!v.empty()) {
    for (auto it = pool.begin(); it != pool.end();) it = it->first.rfind(v, 0) == 0 ? std::next(it) : pool.erase(it);
  }
  TimmTensors out;
  out.layout = CheckpointLayout::OpenClip;
  auto& t = out.tensors;
  Tensor cls = take(pool, v + "class_embedding", path);
  require_rank(cls, 1, path, v + "class_embedding");
  t["cls_token"] = cls.reshape({1, 1, cls.dim(0)});
  Tensor pos = take(pool, v + "positional_embedding", path);
  require_rank(pos, 2, path, v + "positional_embedding");
  t["pos_embed"] = pos.reshape({1, pos.dim(0), pos.dim(1)});
  t["patch_embed.proj.weight"] = take(pool, v + "conv1.weight", path);
  for (std::string k : {"weight", "bias"}) {
    t["norm_pre." + k] = take(pool, v + "ln_pre." + k, path);
    t["norm." + k] = take(pool, v + "ln_post." + k, path);
  }
  int depth = block_count(pool, std::regex(std::regex_replace(v, std::regex(R"(\.)"), R"(\.)") +
                                           R"(transformer\.resblocks\.(\d+)\..*)"));
  for (int i = 0; i < depth; ++i) {
    std::string c = v + "transformer.resblocks." + std::to_string(i) + ".";
    std::string timm = "blocks." + std::to_string(i) + ".";
    t[timm + "attn.qkv.weight"] = take(pool, c + "attn.in_proj_weight", path);
    t[timm + "attn.qkv.bias"] = take(pool, c + "attn.in_proj_bias", path);
    for (std::string k : {"weight", "bias"}) {
      t[timm + "norm1." + k] = take(pool, c + "ln_1." + k, path);
      t[timm + "attn.proj." + k] = take(pool, c + "attn.out_proj." + k, path);
      t[timm + "norm2." + k] = take(pool, c + "ln_2." + k, path);
      t[timm + "mlp.fc1." + k] = take(pool, c + "mlp.c_fc." + k, path);
      t[timm + "mlp.fc2." + k] = take(pool, c + "mlp.c_proj." + k, path);
    }
  }
  if (pool.count(v + "proj")) {
    Tensor proj = take(pool, v + "proj", path);
    require_rank(proj, 2, path, v + "proj");
    t["head.weight"] = transposed(proj);  // x @ proj = x proj^T^T: a linear map with weight proj^T
  }
  VITUNE_CHECK(pool.empty(), path, ": tensors not part of an open_clip visual tower: ", leftover_list(pool));
  return out;
}

}  // namespace vitune::nn::layout
