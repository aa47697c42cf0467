// Per-block bounds for the plasticity report.
#include "peft/plasticity_bounds.h"

#include "engine/error.h"
#include "peft/bounds.h"
#include "peft/spectral_norm.h"

namespace vitune::peft {

namespace {

// Columns [0, count) of a 2-D tensor on any device, as a new f64 tensor on the host.
Tensor leading_columns(const Tensor& m, int64_t count) {
  const int64_t rows = m.dim(0), cols = m.dim(1);
  VITUNE_CHECK(count <= cols, "leading_columns: ", count, " of ", m.str());
  const std::vector<double> v = m.to(Device::cpu()).to(DType::F64).to_vector<double>();
  Tensor out({rows, count}, DType::F64, Device::cpu());
  double* o = out.data<double>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < count; ++c) o[r * count + c] = v[size_t(r * cols + c)];
  return out;
}

}  // namespace

std::vector<double> layer_bounds(const nn::Block& block, const BlockInputStats& inputs, int64_t tokens,
                                 const PlasticityOptions& options, const std::vector<PlasticityComponent>& components) {
  const bool reference = options.protocol == PlasticityProtocol::Reference;
  const double ln1 = layer_norm_bound(block.norm1, inputs.ln1_min_std);
  const double ln2 = layer_norm_bound(block.norm2, inputs.ln2_min_std);
  const double mha = attention_bound(block.attn, tokens, inputs.mha_max_token_norm);
  const double w1 = linear_bound(block.mlp.fc1.weight.value());
  const Tensor& w2 = block.mlp.fc2.weight.value();
  const double fc2 =
      reference ? spectral_norm(leading_columns(w2, block.mlp.fc1.weight.value().dim(1))) : linear_bound(w2);
  const double fc1 = options.fc1_gelu && !reference ? w1 * gelu_lipschitz() : w1;
  std::vector<double> out;
  for (PlasticityComponent c : components) {
    switch (c) {
      case PlasticityComponent::Ln1: out.push_back(ln1); break;
      case PlasticityComponent::Mha: out.push_back(mha); break;
      case PlasticityComponent::Ln2: out.push_back(ln2); break;
      case PlasticityComponent::Fc1: out.push_back(fc1); break;
      case PlasticityComponent::Fc2: out.push_back(fc2); break;
      case PlasticityComponent::Block:
        out.push_back((1.0 + mha * ln1) * (1.0 + fc2 * w1 * gelu_lipschitz() * ln2));
        break;
    }
  }
  return out;
}

}  // namespace vitune::peft
