// Plasticity of a ViT's components: the mean over pairs of distinct inputs (x, y) of
// |f(x) - f(y)|_F / |x - y|_F, per block and component, beside an upper bound for each.
//
// Protocol "paper" (the definition): each component sees its own input in the model's
// forward pass (ln1: norm1_in -> norm1_out, mha: norm1_out -> attn_out, ln2: norm2_in ->
// norm2_out, fc1: norm2_out -> fc1_act (fc1_pre without GELU), fc2: fc1_act -> fc2_out,
// block: norm1_in -> block_out), over all distinct pairs of images within each batch.
//
// Protocol "reference" (what the paper's public code computes): every component of
// every block is applied to the embedding output x0 (blocks.0.norm1_in): ln1, ln2,
// attention without its LayerNorm, fc1 without GELU, fc2 on x0 zero-padded to the hidden
// width; the ratio divides by |x0 - y0|, over pairs (reference image k, downstream image k).
// There is no block component. docs/plasticity.md has the details.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "nn/vit.h"
#include "peft/plasticity_pairs.h"
#include "peft/plasticity_stats.h"

namespace vitune::peft {

enum class PlasticityProtocol { Paper, Reference };
// "paper" or "reference"; throws naming the text and the choices otherwise.
PlasticityProtocol parse_plasticity_protocol(const std::string& text);
const char* protocol_name(PlasticityProtocol protocol);

enum class PlasticityComponent { Ln1, Mha, Ln2, Fc1, Fc2, Block };
const char* component_name(PlasticityComponent component);  // "ln1", "mha", ...
// The components a protocol measures, in report order.
const std::vector<PlasticityComponent>& protocol_components(PlasticityProtocol protocol);

struct PlasticityOptions {
  PlasticityProtocol protocol = PlasticityProtocol::Paper;
  // Paper protocol: fc1 ends at its GELU (fc1_act) or before it (fc1_pre). The reference
  // protocol always measures fc1 without GELU, as the reference code does.
  bool fc1_gelu = true;
};

// What the data showed of the inputs that the bounds depend on, for one block.
struct BlockInputStats {
  double ln1_min_std = std::numeric_limits<double>::infinity();  // min sqrt(var + eps) of a token into ln1
  double ln2_min_std = std::numeric_limits<double>::infinity();  // ... into ln2
  double mha_max_token_norm = 0;                                 // largest token norm into attention
  double mha_token_norm_sum = 0;
  int64_t mha_tokens = 0;
  double mha_mean_token_norm() const { return mha_tokens > 0 ? mha_token_norm_sum / double(mha_tokens) : 0.0; }
};

struct LayerPlasticity {
  int block = 0;
  PlasticityComponent component = PlasticityComponent::Ln1;
  RunningStats ratios;
  int64_t skipped_pairs = 0;                                // pairs whose inputs to this component were identical
  double bound = std::numeric_limits<double>::quiet_NaN();  // NaN before any image was seen
};

struct ComponentPlasticity {
  PlasticityComponent component = PlasticityComponent::Ln1;
  RunningStats ratios;  // over every block
};

struct PlasticityReport {
  PlasticityProtocol protocol = PlasticityProtocol::Paper;
  bool fc1_gelu = true;                         // whether fc1 was measured through its GELU
  int64_t tokens = 0;                           // sequence length n
  int64_t images = 0;                           // downstream images seen
  std::vector<LayerPlasticity> layers;          // block-major, components in protocol order
  std::vector<ComponentPlasticity> components;  // protocol order
  std::vector<BlockInputStats> inputs;          // per block
};

class PlasticityMeter {
 public:
  // The model must outlive the meter and carry no LoRA adapter (merge it first).
  PlasticityMeter(const nn::VisionTransformer& model, PlasticityOptions options);

  // Images may be on any device: the forward pass runs on the model's (docs/plasticity.md
  // says which parts run where).
  // Paper protocol: one no-grad forward of images [B, C, H, W]; all B(B-1)/2 pairs.
  void add_batch(const Tensor& images);
  // Reference protocol: pairs (reference_images[k], images[k]) of two batches of one shape.
  void add_paired_batch(const Tensor& reference_images, const Tensor& images);

  // Measurements so far, with each layer's bound from the weights and the inputs seen.
  PlasticityReport report() const;

 private:
  RunningStats& stats(int block, size_t component) { return stats_[size_t(block) * components_.size() + component]; }
  PairCounts& counts(int block, size_t component) { return counts_[size_t(block) * components_.size() + component]; }
  Tensor embed(const Tensor& images) const;

  const nn::VisionTransformer& model_;
  PlasticityOptions options_;
  std::vector<PlasticityComponent> components_;
  std::vector<RunningStats> stats_;
  std::vector<PairCounts> counts_;
  std::vector<BlockInputStats> inputs_;
  int64_t images_ = 0;
};

// The smallest sqrt(variance + eps) over the tokens (last dimension) of x, variance
// over the d features by two passes in double: the LayerNorm bound's data term. x may
// be on any device; it is read on the host (pass a host copy to read it only once).
double min_token_std(const Tensor& x, double eps);
// Adds the Euclidean norm of every token (last dimension) of x to `stats`' attention
// input statistics (largest, sum and count). x is read on the host, like min_token_std's.
void add_token_norms(const Tensor& x, BlockInputStats& stats);

}  // namespace vitune::peft
