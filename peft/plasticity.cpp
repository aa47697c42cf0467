// The plasticity meter: Gram matrices of observed activations (paper protocol) or
// components applied to the embedding output (reference protocol), and the report.
#include "peft/plasticity.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "autograd/functions.h"
#include "engine/error.h"
#include "peft/plasticity_bounds.h"

namespace vitune::peft {

namespace {

using autograd::Variable;

// The observed activations a paper-protocol component goes from and to.
struct Endpoints {
  const char* input;
  const char* output;
};

Endpoints paper_endpoints(PlasticityComponent component, bool fc1_gelu) {
  switch (component) {
    case PlasticityComponent::Ln1: return {"norm1_in", "norm1_out"};
    case PlasticityComponent::Mha: return {"norm1_out", "attn_out"};
    case PlasticityComponent::Ln2: return {"norm2_in", "norm2_out"};
    case PlasticityComponent::Fc1: return {"norm2_out", fc1_gelu ? "fc1_act" : "fc1_pre"};
    case PlasticityComponent::Fc2: return {"fc1_act", "fc2_out"};
    case PlasticityComponent::Block: return {"norm1_in", "block_out"};
  }
  throw Error("paper_endpoints: unknown component");
}

// "blocks.<i>.<step>" -> (i, step); false for any other name.
bool parse_block_name(const std::string& name, int& block, std::string& step) {
  const std::string prefix = "blocks.";
  if (name.compare(0, prefix.size(), prefix) != 0) return false;
  const size_t dot = name.find('.', prefix.size());
  if (dot == std::string::npos || dot == prefix.size() || dot - prefix.size() > 6) return false;
  for (size_t i = prefix.size(); i < dot; ++i)
    if (name[i] < '0' || name[i] > '9') return false;
  block = std::stoi(name.substr(prefix.size(), dot - prefix.size()));
  step = name.substr(dot + 1);
  return true;
}

// x [B, n, d], on the host, zero-padded to a new host tensor [B, n, width] (width >= d).
Tensor pad_features(const Tensor& x, int64_t width) {
  const int64_t d = x.dim(-1), rows = x.numel() / d;
  VITUNE_CHECK(width >= d, "pad_features: cannot pad ", d, " features to ", width);
  Shape shape = x.shape();
  shape.back() = width;
  Tensor out = Tensor::zeros(shape, DType::F32, x.device());
  const float* in = x.data<float>();
  float* o = out.data<float>();
  for (int64_t r = 0; r < rows; ++r) std::copy(in + r * d, in + (r + 1) * d, o + r * width);
  return out;
}

// The reference protocol's component `component` of `block` applied to x0 [B, n, d],
// on x0's device; `x0_host` is x0 on the host (the same tensor for a host x0), where
// fc2's zero padding is made.
Tensor reference_component(const nn::Block& block, PlasticityComponent component, const Tensor& x0,
                           const Tensor& x0_host) {
  const Variable x(x0);
  switch (component) {
    case PlasticityComponent::Ln1: return block.norm1.forward(x).value();
    case PlasticityComponent::Mha: return block.attn.forward(x, {}, block.prefix + ".attn_ctx").value();
    case PlasticityComponent::Ln2: return block.norm2.forward(x).value();
    case PlasticityComponent::Fc1: return block.mlp.fc1.forward(x).value();
    case PlasticityComponent::Fc2:
      return block.mlp.fc2
          .forward(Variable(pad_features(x0_host, block.mlp.fc2.weight.value().dim(1)).to(x0.device())))
          .value();
    case PlasticityComponent::Block: break;
  }
  throw Error("reference_component: the reference protocol has no such component");
}

void check_images(const Tensor& images, const nn::VitConfig& config, const char* what) {
  VITUNE_CHECK(images.ndim() == 4 && images.dtype() == DType::F32 && images.dim(1) == config.in_chans &&
                   images.dim(2) == config.img_size && images.dim(3) == config.img_size,
               what, ": expected f32 images [B, ", config.in_chans, ", ", config.img_size, ", ", config.img_size,
               "] for this model, got ", images.str());
}

}  // namespace

PlasticityProtocol parse_plasticity_protocol(const std::string& text) {
  if (text == "paper") return PlasticityProtocol::Paper;
  if (text == "reference") return PlasticityProtocol::Reference;
  throw Error(cat("plasticity protocol '", text, "': expected 'paper' or 'reference'"));
}

const char* protocol_name(PlasticityProtocol protocol) {
  return protocol == PlasticityProtocol::Paper ? "paper" : "reference";
}

const char* component_name(PlasticityComponent component) {
  switch (component) {
    case PlasticityComponent::Ln1: return "ln1";
    case PlasticityComponent::Mha: return "mha";
    case PlasticityComponent::Ln2: return "ln2";
    case PlasticityComponent::Fc1: return "fc1";
    case PlasticityComponent::Fc2: return "fc2";
    case PlasticityComponent::Block: return "block";
  }
  return "?";
}

const std::vector<PlasticityComponent>& protocol_components(PlasticityProtocol protocol) {
  using C = PlasticityComponent;
  static const std::vector<C> paper = {C::Ln1, C::Mha, C::Ln2, C::Fc1, C::Fc2, C::Block};
  static const std::vector<C> reference = {C::Ln1, C::Mha, C::Ln2, C::Fc1, C::Fc2};
  return protocol == PlasticityProtocol::Paper ? paper : reference;
}

double min_token_std(const Tensor& x, double eps) {
  VITUNE_CHECK(x.ndim() >= 1 && x.dtype() == DType::F32, "min_token_std: expected an f32 tensor, got ", x.str());
  const int64_t d = x.dim(-1), tokens = d > 0 ? x.numel() / d : 0;
  const Tensor host = x.to(Device::cpu());
  const float* p = host.data<float>();
  double smallest = std::numeric_limits<double>::infinity();
  for (int64_t t = 0; t < tokens; ++t) {
    const float* token = p + t * d;
    double mean = 0;
    for (int64_t k = 0; k < d; ++k) mean += token[k];
    mean /= double(d);
    double variance = 0;
    for (int64_t k = 0; k < d; ++k) variance += (token[k] - mean) * (token[k] - mean);
    variance /= double(d);
    smallest = std::min(smallest, std::sqrt(variance + eps));
  }
  return smallest;
}

void add_token_norms(const Tensor& x, BlockInputStats& stats) {
  VITUNE_CHECK(x.ndim() >= 1 && x.dtype() == DType::F32, "add_token_norms: expected an f32 tensor, got ", x.str());
  const int64_t d = x.dim(-1), tokens = d > 0 ? x.numel() / d : 0;
  const Tensor host = x.to(Device::cpu());
  const float* p = host.data<float>();
  for (int64_t t = 0; t < tokens; ++t) {
    double squares = 0;
    for (int64_t k = 0; k < d; ++k) squares += double(p[t * d + k]) * double(p[t * d + k]);
    const double norm = std::sqrt(squares);
    stats.mha_max_token_norm = std::max(stats.mha_max_token_norm, norm);
    stats.mha_token_norm_sum += norm;
    ++stats.mha_tokens;
  }
}

PlasticityMeter::PlasticityMeter(const nn::VisionTransformer& model, PlasticityOptions options)
    : model_(model), options_(options), components_(protocol_components(options.protocol)) {
  VITUNE_CHECK(!model.has_lora(), "PlasticityMeter: the model carries LoRA adapters, which the bounds (read from the ",
               "plain weights) would miss; merge them first (VisionTransformer::merge_lora)");
  if (options_.protocol == PlasticityProtocol::Reference) options_.fc1_gelu = false;
  const size_t blocks = model.blocks.size();
  stats_.resize(blocks * components_.size());
  counts_.resize(blocks * components_.size());
  inputs_.resize(blocks);
}

void PlasticityMeter::add_batch(const Tensor& images) {
  VITUNE_CHECK(options_.protocol == PlasticityProtocol::Paper,
               "PlasticityMeter::add_batch is the paper protocol; the reference protocol takes add_paired_batch");
  check_images(images, model_.config(), "PlasticityMeter::add_batch");
  std::vector<std::string> wanted;
  for (PlasticityComponent c : components_) {
    Endpoints e = paper_endpoints(c, options_.fc1_gelu);
    wanted.push_back(e.input);
    wanted.push_back(e.output);
  }
  std::map<std::string, Tensor> grams;  // "<block>.<step>" -> Gram matrix
  {
    autograd::NoGradGuard no_grad;
    model_.forward(Variable(images.to(model_.device())), [&](const std::string& name, const Tensor& value) {
      int block = 0;
      std::string step;
      if (!parse_block_name(name, block, step) || block < 0 || size_t(block) >= inputs_.size()) return;
      const bool token_statistics = step == "norm1_in" || step == "norm2_in" || step == "norm1_out";
      const bool gram = std::find(wanted.begin(), wanted.end(), step) != wanted.end();
      if (!token_statistics && !gram) return;
      // The Gram matrix is formed on the activation's device; the token statistics read
      // a host copy (a host activation is used as it is).
      const nn::Block& b = *model_.blocks[size_t(block)];
      BlockInputStats& in = inputs_[size_t(block)];
      if (token_statistics) {
        const Tensor host = value.to(Device::cpu());
        if (step == "norm1_in") in.ln1_min_std = std::min(in.ln1_min_std, min_token_std(host, b.norm1.eps));
        if (step == "norm2_in") in.ln2_min_std = std::min(in.ln2_min_std, min_token_std(host, b.norm2.eps));
        if (step == "norm1_out") add_token_norms(host, in);
      }
      if (gram) grams[std::to_string(block) + "." + step] = gram_matrix(value);
    });
  }
  for (size_t block = 0; block < inputs_.size(); ++block) {
    for (size_t c = 0; c < components_.size(); ++c) {
      Endpoints e = paper_endpoints(components_[c], options_.fc1_gelu);
      auto input = grams.find(std::to_string(block) + "." + e.input);
      auto output = grams.find(std::to_string(block) + "." + e.output);
      VITUNE_CHECK(input != grams.end() && output != grams.end(), "PlasticityMeter: the forward pass did not report ",
                   "blocks.", block, ".", e.input, " and blocks.", block, ".", e.output);
      add_pair_ratios(input->second, output->second, stats(int(block), c), counts(int(block), c));
    }
  }
  images_ += images.dim(0);
}

Tensor PlasticityMeter::embed(const Tensor& images) const {
  Tensor embedding;
  autograd::NoGradGuard no_grad;
  model_.forward(Variable(images.to(model_.device())), [&](const std::string& name, const Tensor& value) {
    if (name == "blocks.0.norm1_in") embedding = value;
  });
  VITUNE_CHECK(embedding.defined(), "PlasticityMeter: the forward pass did not report blocks.0.norm1_in");
  return embedding;
}

void PlasticityMeter::add_paired_batch(const Tensor& reference_images, const Tensor& images) {
  VITUNE_CHECK(options_.protocol == PlasticityProtocol::Reference,
               "PlasticityMeter::add_paired_batch is the reference protocol; the paper protocol takes add_batch");
  check_images(reference_images, model_.config(), "PlasticityMeter::add_paired_batch (reference images)");
  check_images(images, model_.config(), "PlasticityMeter::add_paired_batch (images)");
  VITUNE_CHECK(reference_images.dim(0) == images.dim(0), "PlasticityMeter::add_paired_batch: ", reference_images.dim(0),
               " reference images but ", images.dim(0), " images; pairs need as many of each");
  // The embeddings stay on the model's device for the components; their host copies,
  // made once per batch, serve the distances, the token statistics and fc2's padding.
  const Tensor x_ref = embed(reference_images), x = embed(images);
  const Tensor x_ref_host = x_ref.to(Device::cpu()), x_host = x.to(Device::cpu());
  const std::vector<double> input = matched_distances(x_ref_host, x_host);
  const std::vector<double> scale = matched_scales(x_ref_host, x_host);
  autograd::NoGradGuard no_grad;
  for (size_t block = 0; block < inputs_.size(); ++block) {
    const nn::Block& b = *model_.blocks[block];
    BlockInputStats& in = inputs_[block];
    in.ln1_min_std =
        std::min({in.ln1_min_std, min_token_std(x_ref_host, b.norm1.eps), min_token_std(x_host, b.norm1.eps)});
    in.ln2_min_std =
        std::min({in.ln2_min_std, min_token_std(x_ref_host, b.norm2.eps), min_token_std(x_host, b.norm2.eps)});
    add_token_norms(x_ref_host, in);
    add_token_norms(x_host, in);
    for (size_t c = 0; c < components_.size(); ++c) {
      const std::vector<double> output = matched_distances(reference_component(b, components_[c], x_ref, x_ref_host),
                                                            reference_component(b, components_[c], x, x_host));
      add_matched_ratios(input, scale, output, stats(int(block), c), counts(int(block), c));
    }
  }
  images_ += images.dim(0);
}

PlasticityReport PlasticityMeter::report() const {
  PlasticityReport report;
  report.protocol = options_.protocol;
  report.fc1_gelu = options_.fc1_gelu;
  report.tokens = model_.config().tokens();
  report.images = images_;
  report.inputs = inputs_;
  for (PlasticityComponent c : components_) report.components.push_back({c, RunningStats()});
  for (size_t block = 0; block < inputs_.size(); ++block) {
    const std::vector<double> bounds =
        images_ > 0 ? layer_bounds(*model_.blocks[block], inputs_[block], report.tokens, options_, components_)
                    : std::vector<double>(components_.size(), std::numeric_limits<double>::quiet_NaN());
    for (size_t c = 0; c < components_.size(); ++c) {
      LayerPlasticity layer;
      layer.block = int(block);
      layer.component = components_[c];
      layer.ratios = stats_[block * components_.size() + c];
      layer.skipped_pairs = counts_[block * components_.size() + c].skipped;
      layer.bound = bounds[c];
      report.components[c].ratios.merge(layer.ratios);
      report.layers.push_back(layer);
    }
  }
  return report;
}

}  // namespace vitune::peft
