// The ViT's modules, timm's names and layouts: Linear, LayerNorm, MultiHeadAttention
// (fused qkv, optional q_norm / k_norm), Mlp, Block (pre-norm, optional LayerScale) and PatchEmbed. A parameter a
// module goes without (a bias-free Linear, a Block without LayerScale) holds an
// undefined tensor and is not listed by parameters(). Each module owns its parameters,
// named with their full dotted timm names ("blocks.3.attn.qkv.weight"). A Linear may
// carry a LoRA adapter (nn/lora.h), whose parameters follow its weight and bias. Every
// module makes its parameters on the device its constructor is given; an adapter
// attached later is made on its layer's device.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autograd/functions.h"
#include "nn/lora.h"
#include "nn/parameter.h"
#include "nn/vit_config.h"

namespace vitune::nn {

using autograd::Variable;

// Appends p to `out` unless the module goes without it (an undefined value).
void add_if_defined(Parameter& p, std::vector<Parameter*>& out);

// Called with each named intermediate of a forward pass ("blocks.0.norm1_out", ...).
using Observer = std::function<void(const std::string& name, const Tensor& value)>;

class Linear {
 public:
  Linear(const std::string& prefix, int64_t in_features, int64_t out_features, Device device,
         bool bias = true);
  // x W^T + b, plus the adapter's low-rank term when one is attached.
  Variable forward(const Variable& x) const;
  void parameters(std::vector<Parameter*>& out);
  // Attaches an adapter "<prefix>.lora_A" / ".lora_B" (replacing any attached one).
  void attach_lora(int rank, double alpha, uint64_t seed, uint64_t stream);
  // Folds the adapter into the weight and removes it; nothing when none is attached.
  void merge_lora();
  Parameter weight;  // [out, in]
  Parameter bias;    // [out], undefined without a bias
  std::unique_ptr<LoraAdapter> lora;  // null: a plain linear layer
};

class LayerNorm {
 public:
  LayerNorm(const std::string& prefix, int64_t dim, double eps, Device device);
  Variable forward(const Variable& x) const;
  void parameters(std::vector<Parameter*>& out);
  Parameter weight;
  Parameter bias;
  double eps;
};

class MultiHeadAttention {
 public:
  // With qk_norm, q_norm and k_norm are LayerNorms over a head's D/heads entries, with
  // epsilon `eps` (timm's Attention(qk_norm=True)).
  MultiHeadAttention(const std::string& prefix, int64_t dim, int heads, Device device, bool qkv_bias = true,
                     bool qk_norm = false, double eps = 1e-6);
  // Returns proj(attention(qk_norm(qkv(x)))); reports the context (proj's input) as `ctx_name`.
  Variable forward(const Variable& x, const Observer& observe, const std::string& ctx_name) const;
  void parameters(std::vector<Parameter*>& out);
  Linear qkv;   // [3D, D]: rows q, then k, then v; heads contiguous inside each
  std::unique_ptr<LayerNorm> q_norm;  // null without qk_norm
  std::unique_ptr<LayerNorm> k_norm;
  Linear proj;  // [D, D]
  int heads;
};

class Mlp {
 public:
  Mlp(const std::string& prefix, int64_t dim, int64_t hidden, Device device);
  void parameters(std::vector<Parameter*>& out);
  Linear fc1;
  Linear fc2;
};

// Pre-norm transformer block, with LayerScale when config.init_values > 0:
//   x = x + ls1 * proj(attn(norm1(x)));  x = x + ls2 * fc2(act(fc1(norm2(x)))),
// act the config's gelu or quick_gelu.
class Block {
 public:
  Block(const std::string& prefix, const VitConfig& config, Device device);
  Variable forward(const Variable& x, const Observer& observe) const;
  void parameters(std::vector<Parameter*>& out);
  std::string prefix;
  LayerNorm norm1;
  MultiHeadAttention attn;
  Parameter ls1;  // blocks.N.ls1.gamma [D], undefined without LayerScale
  LayerNorm norm2;
  Mlp mlp;
  Parameter ls2;  // blocks.N.ls2.gamma [D]
  bool quick_gelu;
};

// A conv with kernel = stride = patch, computed as patchify then a linear map with the
// kernel [D, C, p, p] read as a [D, C p p] matrix.
class PatchEmbed {
 public:
  PatchEmbed(int64_t in_chans, int patch, int64_t dim, Device device, bool bias = true);
  Variable forward(const Variable& images) const;  // [B, C, H, W] -> [B, N, D]
  void parameters(std::vector<Parameter*>& out);
  Parameter weight;  // patch_embed.proj.weight [D, C, p, p]
  Parameter bias;    // patch_embed.proj.bias [D], undefined without a bias
  int patch;
};

}  // namespace vitune::nn
