// Renaming and reshaping of Hugging Face and Google npz ViT tensors into timm's layout.
#include <regex>

#include "engine/ops.h"
#include "nn/checkpoint.h"
#include "nn/npz.h"
#include "nn/safetensors.h"

namespace vitune::nn {

namespace {

// out = x with its axes permuted (out axis i is x axis axes[i]), as f32.
Tensor permuted(const Tensor& source, const std::vector<int>& axes) {
  Tensor x = source.to(DType::F32);
  Shape out_shape;
  for (int a : axes) out_shape.push_back(x.dim(a));
  Tensor out = Tensor::like(x, out_shape);
  int n = x.ndim();
  std::vector<int64_t> in_strides(size_t(n), 1);
  for (int i = n - 2; i >= 0; --i) in_strides[size_t(i)] = in_strides[size_t(i + 1)] * x.dim(i + 1);
  std::vector<int64_t> index(size_t(n), 0);
  const float* in = x.data<float>();
  float* o = out.data<float>();
  for (int64_t flat = 0; flat < out.numel(); ++flat) {
    int64_t offset = 0;
    for (int i = 0; i < n; ++i) offset += index[size_t(i)] * in_strides[size_t(axes[size_t(i)])];
    o[flat] = in[offset];
    for (int i = n - 1; i >= 0; --i) {
      if (++index[size_t(i)] < out_shape[size_t(i)]) break;
      index[size_t(i)] = 0;
    }
  }
  return out;
}

Tensor transposed(const Tensor& matrix) { return permuted(matrix, {1, 0}); }

// Rows of several [r_i, ...] tensors stacked into one [sum r_i, ...] f32 tensor.
Tensor stacked_rows(const std::vector<Tensor>& parts) {
  Shape shape = parts[0].shape();
  shape[0] = 0;
  for (const Tensor& p : parts) shape[0] += p.dim(0);
  Tensor out = Tensor::like(parts[0], shape, DType::F32);
  int64_t row = 0;
  for (const Tensor& p : parts) {
    out.rows(row, row + p.dim(0)).copy_from(p.to(DType::F32));
    row += p.dim(0);
  }
  return out;
}

// Takes tensor `name` out of `pool`; a missing one is an error naming the file.
Tensor take(std::map<std::string, Tensor>& pool, const std::string& name, const std::string& path) {
  auto it = pool.find(name);
  VITUNE_CHECK(it != pool.end(), path, ": missing tensor '", name, "'");
  Tensor t = it->second;
  pool.erase(it);
  return t;
}

void require_rank(const Tensor& t, int rank, const std::string& path, const std::string& name) {
  VITUNE_CHECK(t.ndim() == rank, path, ": tensor '", name, "' is ", t.str(), ", expected ", rank,
               " dimensions");
}

std::string leftover_list(const std::map<std::string, Tensor>& pool) {
  std::string names;
  for (const auto& [name, t] : pool) names += (names.empty() ? "" : ", ") + name;
  return names;
}

int block_count(const std::map<std::string, Tensor>& pool, const std::regex& pattern) {
  int depth = 0;
  std::smatch m;
  for (const auto& [name, t] : pool) {
    if (std::regex_match(name, m, pattern)) depth = std::max(depth, std::stoi(m[1].str()) + 1);
  }
  return depth;
}

TimmTensors from_hugging_face(std::map<std::string, Tensor> pool, const std::string& path) {
  // ViTModel checkpoints carry a pooler the classification model does not use.
  for (auto it = pool.begin(); it != pool.end();) {
    bool pooler = it->first.rfind("vit.pooler.", 0) == 0 || it->first.rfind("pooler.", 0) == 0;
    it = pooler ? pool.erase(it) : std::next(it);
  }
  std::string p = pool.count("vit.embeddings.cls_token") ? "vit." : "";
  TimmTensors out;
  out.layout = CheckpointLayout::HuggingFace;
  auto& t = out.tensors;
  auto move = [&](const std::string& from, const std::string& to) { t[to] = take(pool, from, path); };
  move(p + "embeddings.cls_token", "cls_token");
  move(p + "embeddings.position_embeddings", "pos_embed");
  move(p + "embeddings.patch_embeddings.projection.weight", "patch_embed.proj.weight");
  move(p + "embeddings.patch_embeddings.projection.bias", "patch_embed.proj.bias");
  int depth = block_count(pool, std::regex(p == "vit." ? R"(vit\.encoder\.layer\.(\d+)\..*)"
                                                         : R"(encoder\.layer\.(\d+)\..*)"));
  for (int i = 0; i < depth; ++i) {
    std::string hf = p + "encoder.layer." + std::to_string(i) + ".";
    std::string timm = "blocks." + std::to_string(i) + ".";
    for (const char* kind : {"weight", "bias"}) {
      std::string k = kind;
      move(hf + "layernorm_before." + k, timm + "norm1." + k);
      t[timm + "attn.qkv." + k] = stacked_rows({take(pool, hf + "attention.attention.query." + k, path),
                                                take(pool, hf + "attention.attention.key." + k, path),
                                                take(pool, hf + "attention.attention.value." + k, path)});
      move(hf + "attention.output.dense." + k, timm + "attn.proj." + k);
      move(hf + "layernorm_after." + k, timm + "norm2." + k);
      move(hf + "intermediate.dense." + k, timm + "mlp.fc1." + k);
      move(hf + "output.dense." + k, timm + "mlp.fc2." + k);
    }
  }
  move(p + "layernorm.weight", "norm.weight");
  move(p + "layernorm.bias", "norm.bias");
  if (pool.count("classifier.weight")) {
    move("classifier.weight", "head.weight");
    move("classifier.bias", "head.bias");
  }
  VITUNE_CHECK(pool.empty(), path, ": tensors not part of a Hugging Face ViT: ", leftover_list(pool));
  return out;
}

TimmTensors from_google_npz(std::map<std::string, Tensor> pool, const std::string& path) {
  TimmTensors out;
  out.layout = CheckpointLayout::GoogleNpz;
  auto& t = out.tensors;
  t["cls_token"] = take(pool, "cls", path).to(DType::F32);
  t["pos_embed"] = take(pool, "Transformer/posembed_input/pos_embedding", path).to(DType::F32);
  Tensor kernel = take(pool, "embedding/kernel", path);
  require_rank(kernel, 4, path, "embedding/kernel");
  t["patch_embed.proj.weight"] = permuted(kernel, {3, 2, 0, 1});  // [p,p,C,D] -> [D,C,p,p]
  t["patch_embed.proj.bias"] = take(pool, "embedding/bias", path).to(DType::F32);
  int depth = block_count(pool, std::regex(R"(Transformer/encoderblock_(\d+)/.*)"));
  for (int i = 0; i < depth; ++i) {
    std::string g = "Transformer/encoderblock_" + std::to_string(i) + "/";
    std::string timm = "blocks." + std::to_string(i) + ".";
    std::string mha = g + "MultiHeadDotProductAttention_1/";
    auto ln = [&](const std::string& from, const std::string& to) {
      t[timm + to + ".weight"] = take(pool, g + from + "/scale", path).to(DType::F32);
      t[timm + to + ".bias"] = take(pool, g + from + "/bias", path).to(DType::F32);
    };
    ln("LayerNorm_0", "norm1");
    ln("LayerNorm_2", "norm2");
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
      std::string name = g + "MlpBlock_3/" + dense + "/kernel";
      Tensor k = take(pool, name, path);
      require_rank(k, 2, path, name);
      t[timm + "mlp." + fc + ".weight"] = transposed(k);
      t[timm + "mlp." + fc + ".bias"] = take(pool, g + "MlpBlock_3/" + dense + "/bias", path).to(DType::F32);
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

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

TimmTensors read_as_timm(const std::string& path) {
  if (ends_with(path, ".npz")) {
    NpzFile npz = read_npz(path);
    return from_google_npz(npz.arrays, path);
  }
  SafetensorsFile file = read_safetensors(path);
  TimmTensors out;
  bool hugging_face = file.tensors.count("vit.embeddings.cls_token") || file.tensors.count("embeddings.cls_token");
  if (hugging_face) {
    out = from_hugging_face(file.tensors, path);
  } else {
    VITUNE_CHECK(file.tensors.count("cls_token") && file.tensors.count("patch_embed.proj.weight"), path,
                 ": not a ViT checkpoint in a known layout (expected timm's cls_token and ",
                 "patch_embed.proj.weight, or Hugging Face's [vit.]embeddings.cls_token)");
    out.tensors = file.tensors;
    if (file.metadata.count("trainer_state")) {
      // A training checkpoint: its optimizer state is not part of the model.
      for (auto it = out.tensors.begin(); it != out.tensors.end();) {
        it = it->first.rfind("optim.", 0) == 0 ? out.tensors.erase(it) : std::next(it);
      }
    }
  }
  out.metadata = file.metadata;
  return out;
}

}  // namespace vitune::nn
