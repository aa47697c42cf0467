// Google ViT (AugReg) and big_vision .npz checkpoints renamed and reshaped into timm's
// layout; big_vision keeps the same names under `params/` (or `opt/target/` in a
// training checkpoint's optimizer state).
#include "nn/layout_util.h"

namespace vitune::nn::layout {

namespace {

// The module names inside a block and of the position embedding: the original ViT /
// AugReg code numbers the block's submodules 0, 1, 2, 3; big_vision's 0, 0, 1, 0 and
// keeps pos_embedding at the top, added to the patches only (timm's no_embed_class).
struct GoogleNames {
  const char* pos_embedding;
  const char* attention;
  const char* norm2;
  const char* mlp;
};
constexpr GoogleNames kAugRegNames = {"Transformer/posembed_input/pos_embedding", "MultiHeadDotProductAttention_1",
                                      "LayerNorm_2", "MlpBlock_3"};
constexpr GoogleNames kBigVisionNames = {"pos_embedding", "MultiHeadDotProductAttention_0", "LayerNorm_1",
                                         "MlpBlock_0"};

TimmTensors from_google_names(std::map<std::string, Tensor> pool, const std::string& path, const GoogleNames& n) {
  TimmTensors out;
  out.layout = CheckpointLayout::GoogleNpz;
  auto& t = out.tensors;
  t["cls_token"] = take(pool, "cls", path).to(DType::F32);
  t["pos_embed"] = take(pool, n.pos_embedding, path).to(DType::F32);
  Tensor kernel = take(pool, "embedding/kernel", path);
  require_rank(kernel, 4, path, "embedding/kernel");
  t["patch_embed.proj.weight"] = permuted(kernel, {3, 2, 0, 1});  // [p,p,C,D] -> [D,C,p,p]
  t["patch_embed.proj.bias"] = take(pool, "embedding/bias", path).to(DType::F32);
  int depth = block_count(pool, std::regex(R"(Transformer/encoderblock_(\d+)/.*)"));
  for (int i = 0; i < depth; ++i) {
    std::string g = "Transformer/encoderblock_" + std::to_string(i) + "/";
    std::string timm = "blocks." + std::to_string(i) + ".";
    std::string mha = g + n.attention + "/";
    auto ln = [&](const std::string& from, const std::string& to) {
      t[timm + to + ".weight"] = take(pool, g + from + "/scale", path).to(DType::F32);
      t[timm + to + ".bias"] = take(pool, g + from + "/bias", path).to(DType::F32);
    };
    ln("LayerNorm_0", "norm1");
    ln(n.norm2, "norm2");
    // query/key/value kernels are [D, H, dh]: as [D_in, D_out] matrices, transposed.
    std::vector<Tensor> weights, biases;
    for (const char* part : {"query", "key", "value"}) {
      std::string name = mha + part + "/kernel";
      Tensor k = take(pool, name, path);
      require_rank(k, 3, path, name);
      out.heads_hint = int(k.dim(1));
      weights.push_back(transposed(k.reshape({k.dim(0), k.dim(1) * k.dim(2)})));
      biases.push_back(take(pool, mha + part + "/bias", path).reshape({-1}));
    }
    t[timm + "attn.qkv.weight"] = stacked_rows(weights);
    t[timm + "attn.qkv.bias"] = stacked_rows(biases);
    // out kernel is [H, dh, D]: as a [D_in, D_out] matrix, transposed.
    Tensor out_kernel = take(pool, mha + "out/kernel", path);
    require_rank(out_kernel, 3, path, mha + "out/kernel");
    t[timm + "attn.proj.weight"] =
        transposed(out_kernel.reshape({out_kernel.dim(0) * out_kernel.dim(1), out_kernel.dim(2)}));
    t[timm + "attn.proj.bias"] = take(pool, mha + "out/bias", path).to(DType::F32);
    for (const auto& [dense, fc] : {std::pair{"Dense_0", "fc1"}, std::pair{"Dense_1", "fc2"}}) {
      std::string name = g + n.mlp + "/" + dense + "/kernel";
      Tensor k = take(pool, name, path);
      require_rank(k, 2, path, name);
      t[timm + "mlp." + fc + ".weight"] = transposed(k);
      t[timm + "mlp." + fc + ".bias"] = take(pool, g + n.mlp + "/" + dense + "/bias", path).to(DType::F32);
    }
  }
  t["norm.weight"] = take(pool, "Transformer/encoder_norm/scale", path).to(DType::F32);
  t["norm.bias"] = take(pool, "Transformer/encoder_norm/bias", path).to(DType::F32);
  if (pool.count("head/kernel")) {
    Tensor head = take(pool, "head/kernel", path);
    require_rank(head, 2, path, "head/kernel");
    t["head.weight"] = transposed(head);
    t["head.bias"] = take(pool, "head/bias", path).to(DType::F32);
  }
  VITUNE_CHECK(pool.empty(), path, ": tensors not part of a Google ViT checkpoint: ", leftover_list(pool));
  return out;
}

}  // namespace

TimmTensors from_big_vision(std::map<std::string, Tensor> pool, const std::string& path) {
  // As timm's _load_weights tells them apart: opt/target/ holds the AugReg names,
  // params/ big_vision's.
  for (const auto& [prefix, names] : {std::pair{std::string("opt/target/"), kAugRegNames},
                                      std::pair{std::string("params/"), kBigVisionNames}}) {
    if (!pool.count(prefix + "embedding/kernel")) continue;
    std::map<std::string, Tensor> renamed;
    for (auto& [name, tensor] : pool) {
      // Everything outside the prefix (optimizer moments, step counters) is not the model.
      if (name.rfind(prefix, 0) == 0) renamed[name.substr(prefix.size())] = tensor;
    }
    return from_google_names(std::move(renamed), path, names);
  }
  return from_google_names(std::move(pool), path, kAugRegNames);
}

}  // namespace vitune::nn::layout
