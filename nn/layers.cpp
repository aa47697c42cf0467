// Forward passes of the ViT's modules, composed from the tape's fused functions.
#include "nn/layers.h"

namespace vitune::nn {

namespace {
void notify(const Observer& observe, const std::string& name, const Variable& v) {
  if (observe) observe(name, v.value());
}

// A parameter that exists when `present`: zeros [size], else an undefined tensor.
Tensor optional_zeros(bool present, int64_t size, Device device) {
  return present ? Tensor::zeros({size}, DType::F32, device) : Tensor();
}

Variable layer_scaled(const Parameter& gamma, const Variable& x) {
  return gamma.value().defined() ? autograd::mul_channels(x, gamma.var()) : x;
}
}  // namespace

void add_if_defined(Parameter& p, std::vector<Parameter*>& out) {
  if (p.value().defined()) out.push_back(&p);
}

Linear::Linear(const std::string& prefix, int64_t in_features, int64_t out_features, Device device, bool bias)
    : weight(prefix + ".weight", Tensor::zeros({out_features, in_features}, DType::F32, device)),
      bias(prefix + ".bias", optional_zeros(bias, out_features, device)) {}

Variable Linear::forward(const Variable& x) const {
  Variable b = bias.value().defined() ? bias.var() : Variable();
  if (!lora) return autograd::linear(x, weight.var(), b);
  return autograd::lora_linear(x, weight.var(), b, lora->lora_A.var(), lora->lora_B.var(), lora->scaling());
}

void Linear::parameters(std::vector<Parameter*>& out) {
  out.push_back(&weight);
  add_if_defined(bias, out);
  if (lora) lora->parameters(out);
}

void Linear::attach_lora(int rank, double alpha, uint64_t seed, uint64_t stream) {
  const std::string& name = weight.name();
  const std::string prefix = name.substr(0, name.size() - std::string(".weight").size());
  lora = std::make_unique<LoraAdapter>(prefix, weight.shape()[1], weight.shape()[0], rank, alpha, seed, stream,
                                       weight.value().device());
}

void Linear::merge_lora() {
  if (!lora) return;
  lora->merge_into(weight.mutable_value());
  lora.reset();
}

LayerNorm::LayerNorm(const std::string& prefix, int64_t dim, double eps, Device device)
    : weight(prefix + ".weight", Tensor::full({dim}, 1.0, DType::F32, device)),
      bias(prefix + ".bias", Tensor::zeros({dim}, DType::F32, device)),
      eps(eps) {}

Variable LayerNorm::forward(const Variable& x) const {
  return autograd::layer_norm(x, weight.var(), bias.var(), eps);
}

void LayerNorm::parameters(std::vector<Parameter*>& out) {
  out.push_back(&weight);
  out.push_back(&bias);
}

MultiHeadAttention::MultiHeadAttention(const std::string& prefix, int64_t dim, int heads, Device device,
                                       bool qkv_bias, bool qk_norm, double eps)
    : qkv(prefix + ".qkv", dim, 3 * dim, device, qkv_bias), proj(prefix + ".proj", dim, dim, device), heads(heads) {
  if (qk_norm) {
    q_norm = std::make_unique<LayerNorm>(prefix + ".q_norm", dim / heads, eps, device);
    k_norm = std::make_unique<LayerNorm>(prefix + ".k_norm", dim / heads, eps, device);
  }
}

Variable MultiHeadAttention::forward(const Variable& x, const Observer& observe,
                                     const std::string& ctx_name) const {
  Variable fused = qkv.forward(x);
  if (q_norm) {
    fused = autograd::qk_layer_norm(fused, heads, q_norm->weight.var(), q_norm->bias.var(), k_norm->weight.var(),
                                    k_norm->bias.var(), q_norm->eps);
  }
  Variable ctx = autograd::attention(fused, heads);
  notify(observe, ctx_name, ctx);
  return proj.forward(ctx);
}

void MultiHeadAttention::parameters(std::vector<Parameter*>& out) {
  qkv.parameters(out);
  if (q_norm) {
    q_norm->parameters(out);
    k_norm->parameters(out);
  }
  proj.parameters(out);
}

Mlp::Mlp(const std::string& prefix, int64_t dim, int64_t hidden, Device device)
    : fc1(prefix + ".fc1", dim, hidden, device), fc2(prefix + ".fc2", hidden, dim, device) {}

void Mlp::parameters(std::vector<Parameter*>& out) {
  fc1.parameters(out);
  fc2.parameters(out);
}

Block::Block(const std::string& prefix, const VitConfig& config, Device device)
    : prefix(prefix),
      norm1(prefix + ".norm1", config.dim, config.ln_eps, device),
      attn(prefix + ".attn", config.dim, config.heads, device, config.qkv_bias, config.qk_norm, config.ln_eps),
      ls1(prefix + ".ls1.gamma", optional_zeros(config.init_values > 0, config.dim, device)),
      norm2(prefix + ".norm2", config.dim, config.ln_eps, device),
      mlp(prefix + ".mlp", config.dim, config.hidden(), device),
      ls2(prefix + ".ls2.gamma", optional_zeros(config.init_values > 0, config.dim, device)),
      quick_gelu(config.act == "quick_gelu") {}

Variable Block::forward(const Variable& x, const Observer& observe) const {
  const std::string p = prefix + ".";
  notify(observe, p + "norm1_in", x);
  Variable h = norm1.forward(x);
  notify(observe, p + "norm1_out", h);
  Variable attn_out = layer_scaled(ls1, attn.forward(h, observe, p + "attn_ctx"));
  notify(observe, p + "attn_out", attn_out);
  Variable mid = autograd::add(x, attn_out);
  notify(observe, p + "norm2_in", mid);
  Variable h2 = norm2.forward(mid);
  notify(observe, p + "norm2_out", h2);
  Variable pre = mlp.fc1.forward(h2);
  notify(observe, p + "fc1_pre", pre);
  Variable act = quick_gelu ? autograd::quick_gelu(pre) : autograd::gelu(pre);
  notify(observe, p + "fc1_act", act);
  Variable fc2_out = layer_scaled(ls2, mlp.fc2.forward(act));
  notify(observe, p + "fc2_out", fc2_out);
  Variable out = autograd::add(mid, fc2_out);
  notify(observe, p + "block_out", out);
  return out;
}

void Block::parameters(std::vector<Parameter*>& out) {
  norm1.parameters(out);
  attn.parameters(out);
  add_if_defined(ls1, out);
  norm2.parameters(out);
  mlp.parameters(out);
  add_if_defined(ls2, out);
}

PatchEmbed::PatchEmbed(int64_t in_chans, int patch, int64_t dim, Device device, bool bias)
    : weight("patch_embed.proj.weight", Tensor::zeros({dim, in_chans, patch, patch}, DType::F32, device)),
      bias("patch_embed.proj.bias", optional_zeros(bias, dim, device)),
      patch(patch) {}

Variable PatchEmbed::forward(const Variable& images) const {
  return autograd::linear(autograd::patchify(images, patch), weight.var(),
                          bias.value().defined() ? bias.var() : Variable());
}

void PatchEmbed::parameters(std::vector<Parameter*>& out) {
  out.push_back(&weight);
  add_if_defined(bias, out);
}

}  // namespace vitune::nn
