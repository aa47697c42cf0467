// The ViT's construction, forward pass and initialisation.
#include "nn/vit.h"

#include "engine/random.h"

namespace vitune::nn {

namespace {

Tensor token_zeros(bool present, int64_t count, int64_t dim, Device device) {
  return present ? Tensor::zeros({1, count, dim}, DType::F32, device) : Tensor();
}

std::unique_ptr<LayerNorm> optional_norm(bool present, const std::string& name, const VitConfig& c, Device device) {
  return present ? std::make_unique<LayerNorm>(name, c.dim, c.ln_eps, device) : nullptr;
}

// The tokens of `tokens` [1, T, D], in order, before every sequence of x [B, N, D].
Variable prepend_tokens(const Parameter& tokens, Variable x) {
  const int64_t count = tokens.value().dim(1), dim = tokens.value().dim(2);
  for (int64_t i = count - 1; i >= 0; --i) {
    Variable one = count == 1 ? tokens.var()
                              : autograd::reshape(autograd::select_token(tokens.var(), i), {1, 1, dim});
    x = autograd::prepend_token(one, x);
  }
  return x;
}

}  // namespace

VisionTransformer::VisionTransformer(const VitConfig& config, Device device)
    : patch_embed(config.in_chans, config.patch, config.dim, device, !config.pre_norm),
      cls_token("cls_token", token_zeros(config.class_token, 1, config.dim, device)),
      reg_token("reg_token", token_zeros(config.reg_tokens > 0, config.reg_tokens, config.dim, device)),
      dist_token("dist_token", token_zeros(config.dist_token, 1, config.dim, device)),
      pos_embed("pos_embed", Tensor::zeros({1, config.pos_tokens(), config.dim}, DType::F32, device)),
      config_(config) {
  config.validate("ViT config");
  norm_pre = optional_norm(config.pre_norm, "norm_pre", config, device);
  for (int i = 0; i < config.depth; ++i) {
    blocks.push_back(std::make_unique<Block>("blocks." + std::to_string(i), config, device));
  }
  norm = optional_norm(!config.fc_norm, "norm", config, device);
  fc_norm = optional_norm(config.fc_norm, "fc_norm", config, device);
  make_heads(config.num_classes, device);
  collect_parameters();
}

void VisionTransformer::make_heads(int num_classes, Device device) {
  head.reset();
  head_dist.reset();
  if (num_classes == 0) return;
  head = std::make_unique<Linear>("head", config_.dim, num_classes, device, config_.head_bias);
  if (config_.dist_token) head_dist = std::make_unique<Linear>("head_dist", config_.dim, num_classes, device);
}

void VisionTransformer::collect_parameters() {
  parameters_.clear();
  add_if_defined(cls_token, parameters_);
  add_if_defined(reg_token, parameters_);
  add_if_defined(dist_token, parameters_);
  parameters_.push_back(&pos_embed);
  patch_embed.parameters(parameters_);
  if (norm_pre) norm_pre->parameters(parameters_);
  for (auto& block : blocks) block->parameters(parameters_);
  if (norm) norm->parameters(parameters_);
  if (fc_norm) fc_norm->parameters(parameters_);
  if (head) head->parameters(parameters_);
  if (head_dist) head_dist->parameters(parameters_);
}

Variable VisionTransformer::encode(const Variable& images, const Observer& observe) const {
  const Tensor& x = images.value();
  VITUNE_CHECK(x.ndim() == 4 && x.dim(1) == config_.in_chans && x.dim(2) == config_.img_size &&
                   x.dim(3) == config_.img_size,
               "ViT input: expected images [B, ", config_.in_chans, ", ", config_.img_size, ", ",
               config_.img_size, "], got ", x.str());
  Variable tokens = patch_embed.forward(images);
  // timm's _pos_embed: without no_embed_class the position embedding covers the prefix.
  if (config_.no_embed_class) tokens = autograd::add_broadcast_batch(tokens, pos_embed.var());
  if (config_.dist_token) tokens = prepend_tokens(dist_token, tokens);
  if (config_.reg_tokens > 0) tokens = prepend_tokens(reg_token, tokens);
  if (config_.class_token) tokens = prepend_tokens(cls_token, tokens);
  if (!config_.no_embed_class) tokens = autograd::add_broadcast_batch(tokens, pos_embed.var());
  if (norm_pre) tokens = norm_pre->forward(tokens);
  for (const auto& block : blocks) tokens = block->forward(tokens, observe);
  return norm ? norm->forward(tokens) : tokens;
}

Variable VisionTransformer::features(const Variable& images, const Observer& observe) const {
  Variable tokens = encode(images, observe);
  if (config_.dist_token) {
    return autograd::scale(autograd::add(autograd::select_token(tokens, 0), autograd::select_token(tokens, 1)), 0.5);
  }
  Variable pooled = config_.global_pool == "avg"    ? autograd::mean_tokens(tokens, config_.prefix_tokens())
                   : config_.global_pool == "none" ? tokens
                                                   : autograd::select_token(tokens, 0);
  return fc_norm ? fc_norm->forward(pooled) : pooled;
}

Variable VisionTransformer::forward(const Variable& images, const Observer& observe) const {
  if (head_dist) {
    Variable tokens = encode(images, observe);
    Variable logits = head->forward(autograd::select_token(tokens, 0));
    Variable logits_dist = head_dist->forward(autograd::select_token(tokens, 1));
    return autograd::scale(autograd::add(logits, logits_dist), 0.5);
  }
  Variable feature = features(images, observe);
  return head ? head->forward(feature) : feature;
}

Parameter* VisionTransformer::find_parameter(const std::string& name) const {
  for (Parameter* p : parameters_) {
    if (p->name() == name) return p;
  }
  return nullptr;
}

Parameter& VisionTransformer::parameter(const std::string& name) const {
  Parameter* p = find_parameter(name);
  VITUNE_CHECK(p != nullptr, "the model has no parameter '", name, "' (names are timm's, e.g. ",
               "blocks.0.attn.qkv.weight; depth ", config_.depth, ")");
  return *p;
}

int64_t VisionTransformer::parameter_count() const {
  int64_t total = 0;
  for (const Parameter* p : parameters_) total += p->numel();
  return total;
}

void VisionTransformer::to(Device device) {
  for (Parameter* p : parameters_) p->to(device);
}

Device VisionTransformer::device() const { return parameters_.front()->value().device(); }

void VisionTransformer::reset_head(int num_classes, uint64_t seed) {
  VITUNE_CHECK(num_classes >= 0 && num_classes <= 1000000, "a head needs 0 to 1000000 classes, got ", num_classes);
  config_.num_classes = num_classes;
  config_.head_bias = true;
  make_heads(num_classes, device());
  // Streams past every other parameter's, so the heads do not repeat their draws.
  if (head) fill_trunc_normal(head->weight.mutable_value(), seed, 1u << 20, 0.02);
  if (head_dist) fill_trunc_normal(head_dist->weight.mutable_value(), seed, (1u << 20) + 1, 0.02);
  collect_parameters();
}

namespace {
Linear& target_layer(Block& block, LoraTarget target) {
  switch (target) {
    case LoraTarget::Qkv: return block.attn.qkv;
    case LoraTarget::Proj: return block.attn.proj;
    case LoraTarget::Fc1: return block.mlp.fc1;
    case LoraTarget::Fc2: return block.mlp.fc2;
  }
  throw Error("LoRA: unknown target layer");
}
constexpr LoraTarget kAllTargets[] = {LoraTarget::Qkv, LoraTarget::Proj, LoraTarget::Fc1, LoraTarget::Fc2};
}  // namespace

void VisionTransformer::add_lora(const LoraOptions& options) {
  options.validate();
  for (Parameter* p : parameters_) {
    if (p->name().rfind("head", 0) != 0) p->freeze();  // head.* and head_dist.* train
  }
  for (size_t b = 0; b < blocks.size(); ++b) {
    for (LoraTarget target : options.targets) {
      uint64_t stream = (1ull << 21) + 4 * b + static_cast<uint64_t>(target);
      target_layer(*blocks[b], target).attach_lora(options.rank, options.alpha, options.seed, stream);
    }
  }
  collect_parameters();
}

void VisionTransformer::merge_lora() {
  for (auto& block : blocks) {
    for (LoraTarget target : kAllTargets) target_layer(*block, target).merge_lora();
  }
  collect_parameters();
}

bool VisionTransformer::has_lora() const {
  for (const auto& block : blocks) {
    for (LoraTarget target : kAllTargets) {
      if (target_layer(*block, target).lora) return true;
    }
  }
  return false;
}

void VisionTransformer::init_weights(uint64_t seed) {
  for (size_t i = 0; i < parameters_.size(); ++i) {
    Parameter& p = *parameters_[i];
    Tensor& value = p.mutable_value();
    const std::string& name = p.name();
    bool is_bias = name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
    bool is_norm = name.find("norm") != std::string::npos;
    bool is_gamma = name.size() >= 6 && name.compare(name.size() - 6, 6, ".gamma") == 0;
    if (name == "cls_token" || name == "reg_token") {
      fill_normal(value, seed, i, 0.0, 1e-6);
    } else if (is_gamma) {
      value.fill(config_.init_values);
    } else if (is_norm) {
      value.fill(is_bias ? 0.0 : 1.0);
    } else if (is_bias) {
      value.zero();
    } else {
      fill_trunc_normal(value, seed, i, 0.02);
    }
  }
}

}  // namespace vitune::nn
