// The ViT's construction, forward pass and initialisation.
#include "nn/vit.h"

#include "engine/random.h"

namespace vitune::nn {

VisionTransformer::VisionTransformer(const VitConfig& config, Device device)
    : patch_embed(config.in_chans, config.patch, config.dim, device),
      cls_token("cls_token", Tensor::zeros({1, 1, config.dim}, DType::F32, device)),
      pos_embed("pos_embed", Tensor::zeros({1, config.tokens(), config.dim}, DType::F32, device)),
      norm("norm", config.dim, config.ln_eps, device),
      config_(config) {
  config.validate("ViT config");
  for (int i = 0; i < config.depth; ++i) {
    blocks.push_back(std::make_unique<Block>("blocks." + std::to_string(i), config.dim, config.heads,
                                             config.hidden(), config.ln_eps, device));
  }
  if (config.num_classes > 0) head = std::make_unique<Linear>("head", config.dim, config.num_classes, device);
  collect_parameters();
}

void VisionTransformer::collect_parameters() {
  parameters_.clear();
  parameters_.push_back(&cls_token);
  parameters_.push_back(&pos_embed);
  patch_embed.parameters(parameters_);
  for (auto& block : blocks) block->parameters(parameters_);
  norm.parameters(parameters_);
  if (head) head->parameters(parameters_);
}

Variable VisionTransformer::features(const Variable& images, const Observer& observe) const {
  const Tensor& x = images.value();
  VITUNE_CHECK(x.ndim() == 4 && x.dim(1) == config_.in_chans && x.dim(2) == config_.img_size &&
                   x.dim(3) == config_.img_size,
               "ViT input: expected images [B, ", config_.in_chans, ", ", config_.img_size, ", ",
               config_.img_size, "], got ", x.str());
  Variable tokens = patch_embed.forward(images);
  tokens = autograd::prepend_token(cls_token.var(), tokens);
  tokens = autograd::add_broadcast_batch(tokens, pos_embed.var());
  for (const auto& block : blocks) tokens = block->forward(tokens, observe);
  return autograd::select_token(norm.forward(tokens), 0);
}

Variable VisionTransformer::forward(const Variable& images, const Observer& observe) const {
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
  head.reset();
  if (num_classes > 0) {
    head = std::make_unique<Linear>("head", config_.dim, num_classes, device());
    // Stream past every other parameter's, so the head does not repeat their draws.
    fill_trunc_normal(head->weight.mutable_value(), seed, 1u << 20, 0.02);
  }
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
    if (p->name().rfind("head.", 0) != 0) p->freeze();
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
    if (name == "cls_token") {
      fill_normal(value, seed, i, 0.0, 1e-6);
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
