// LoRA (low-rank adaptation) of a Linear layer: y = x W^T + b + (alpha / r) (x A^T) B^T
// with A [r, in] and B [out, r] trainable and W, b frozen. A starts Kaiming-uniform as
// the reference LoRA code draws it (U(-1/sqrt(in), 1/sqrt(in))), B at zero, so the
// adapted layer starts equal to the base one. Merging folds the update into W
// (W += (alpha / r) B A), which leaves a plain Linear. The adapted Linear runs as one
// tape function (autograd::lora_linear): it keeps the plain layer's activations plus the
// rank-r x A^T, and never forms W + (alpha / r) B A or a gradient of the frozen W.
#pragma once

#include <string>
#include <vector>

#include "nn/parameter.h"

namespace vitune::nn {

// Which linear layers of every block get an adapter.
enum class LoraTarget { Qkv, Proj, Fc1, Fc2 };
const char* lora_target_name(LoraTarget target);
// A comma list of qkv, proj, fc1, fc2 (no repeats); `flag` names the option in errors.
std::vector<LoraTarget> parse_lora_targets(const std::string& text, const std::string& flag);

struct LoraOptions {
  int rank = 8;
  double alpha = 8.0;
  std::vector<LoraTarget> targets = {LoraTarget::Qkv};
  uint64_t seed = 0;
  // Throws vitune::Error for a rank below 1, a non-finite or non-positive alpha, or no targets.
  void validate() const;
};

class LoraAdapter {
 public:
  // Parameters "<prefix>.lora_A" [rank, in] and "<prefix>.lora_B" [out, rank] on
  // `device`; A drawn from stream `stream` of `seed`.
  LoraAdapter(const std::string& prefix, int64_t in_features, int64_t out_features, int rank, double alpha,
              uint64_t seed, uint64_t stream, Device device);

  // weight += (alpha / rank) B A, for a weight [out, in].
  void merge_into(Tensor& weight) const;
  void parameters(std::vector<Parameter*>& out);

  double scaling() const { return scaling_; }
  Parameter lora_A;  // [rank, in]
  Parameter lora_B;  // [out, rank]

 private:
  double scaling_;
};

}  // namespace vitune::nn
