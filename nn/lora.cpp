// LoRA adapters: their initialisation and merge into the base weight (the forward is
// autograd::lora_linear, called by the adapted Linear).
#include "nn/lora.h"

#include <cmath>
#include <sstream>

#include "engine/ops.h"
#include "engine/random.h"

namespace vitune::nn {

const char* lora_target_name(LoraTarget target) {
  switch (target) {
    case LoraTarget::Qkv: return "qkv";
    case LoraTarget::Proj: return "proj";
    case LoraTarget::Fc1: return "fc1";
    case LoraTarget::Fc2: return "fc2";
  }
  return "?";
}

std::vector<LoraTarget> parse_lora_targets(const std::string& text, const std::string& flag) {
  static const LoraTarget kAll[] = {LoraTarget::Qkv, LoraTarget::Proj, LoraTarget::Fc1, LoraTarget::Fc2};
  std::vector<LoraTarget> out;
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) {
    bool known = false;
    for (LoraTarget t : kAll) {
      if (item != lora_target_name(t)) continue;
      known = true;
      for (LoraTarget seen : out) VITUNE_CHECK(seen != t, flag, ": '", item, "' is listed twice");
      out.push_back(t);
    }
    VITUNE_CHECK(known, flag, ": unknown target '", item, "'; expected a comma list of qkv, proj, fc1, fc2");
  }
  VITUNE_CHECK(!out.empty(), flag, ": expected a comma list of qkv, proj, fc1, fc2, got '", text, "'");
  return out;
}

void LoraOptions::validate() const {
  VITUNE_CHECK(rank >= 1, "LoRA: the rank must be at least 1, got ", rank);
  VITUNE_CHECK(std::isfinite(alpha) && alpha > 0, "LoRA: alpha must be positive and finite, got ", alpha);
  VITUNE_CHECK(!targets.empty(), "LoRA: no target layers");
}

LoraAdapter::LoraAdapter(const std::string& prefix, int64_t in_features, int64_t out_features, int rank,
                         double alpha, uint64_t seed, uint64_t stream, Device device)
    : lora_A(prefix + ".lora_A", Tensor::zeros({rank, in_features}, DType::F32, device)),
      lora_B(prefix + ".lora_B", Tensor::zeros({out_features, rank}, DType::F32, device)),
      scaling_(alpha / rank) {
  // kaiming_uniform_(a = sqrt(5)) on a [rank, in] matrix: gain sqrt(2 / (1 + 5)), bound
  // gain * sqrt(3 / in) = 1 / sqrt(in).
  const double bound = 1.0 / std::sqrt(double(in_features));
  fill_uniform(lora_A.mutable_value(), seed, stream, -bound, bound);
}

void LoraAdapter::merge_into(Tensor& weight) const {
  VITUNE_CHECK(weight.ndim() == 2 && weight.dim(0) == lora_B.shape()[0] && weight.dim(1) == lora_A.shape()[1],
               "LoRA merge '", lora_A.name(), "': weight ", weight.str(), " does not match A ",
               lora_A.value().str(), " and B ", lora_B.value().str());
  ops::gemm(false, false, scaling_, lora_B.value(), lora_A.value(), 1.0, weight);
}

void LoraAdapter::parameters(std::vector<Parameter*>& out) {
  out.push_back(&lora_A);
  out.push_back(&lora_B);
}

}  // namespace vitune::nn
