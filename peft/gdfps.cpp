// GD-FPS growth and scores.
#include "peft/gdfps.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/error.h"
#include "engine/parallel.h"

namespace vitune::peft {

Tensor feature_growth(const Tensor& down_on_any, const Tensor& anchor_on_any) {
  const Tensor down = down_on_any.to(Device::cpu()), anchor = anchor_on_any.to(Device::cpu());
  VITUNE_CHECK(down.dtype() == DType::F64 && anchor.dtype() == DType::F64 && down.ndim() == 1 &&
                   down.shape() == anchor.shape(),
               "GD-FPS growth: expected task and anchor statistics f64[in] of one size, got ", down.str(), " and ",
               anchor.str());
  const int64_t n = down.numel();
  Tensor growth = Tensor::like(down, {n});
  const double* d = down.data<double>();
  const double* a = anchor.data<double>();
  double* g = growth.data<double>();
  for (int64_t k = 0; k < n; ++k) {
    if (a[k] > 0) {
      g[k] = d[k] / a[k] - 1.0;
    } else {
      g[k] = d[k] > 0 ? std::numeric_limits<double>::infinity() : 0.0;
    }
  }
  return growth;
}

Tensor gdfps_scores(const Tensor& weight, const Tensor& growth_on_any) {
  const Tensor growth = growth_on_any.to(Device::cpu());
  VITUNE_CHECK(weight.ndim() >= 2 && growth.dtype() == DType::F64 && growth.ndim() == 1 &&
                   weight.numel() == weight.dim(0) * growth.numel(),
               "GD-FPS scores: weight ", weight.str(), " cannot be read as [out, ", growth.numel(),
               "] for a growth vector ", growth.str());
  const int64_t rows = weight.dim(0), cols = growth.numel();
  // One layer's weight is small: it is scored on the host, wherever the model lives.
  const Tensor host = weight.to(Device::cpu());
  const Tensor w = host.dtype() == DType::F64 ? host : host.to(DType::F64);
  Tensor scores = Tensor::like(w, {rows, cols});
  const double* wv = w.data<double>();
  const double* g = growth.data<double>();
  double* s = scores.data<double>();
  parallel_for(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, cols)), [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      for (int64_t k = 0; k < cols; ++k) s[j * cols + k] = std::fabs(wv[j * cols + k]) * g[k];
    }
  });
  return scores;
}

std::vector<TensorSelection> gdfps_select(const nn::VisionTransformer& model, const std::vector<std::string>& names,
                                          const Anchor& anchor, const std::vector<std::pair<std::string, Tensor>>& down,
                                          int64_t k) {
  std::vector<TensorSelection> selections;
  for (const std::string& name : names) {
    const Tensor* down_means = nullptr;
    for (const auto& [layer, means] : down) {
      if (layer == name) down_means = &means;
    }
    VITUNE_CHECK(down_means, "GD-FPS: ", name, " is not a measured linear layer (patch_embed.proj.weight, ",
                 "blocks.N.attn.qkv/proj.weight, blocks.N.mlp.fc1/fc2.weight)");
    const Tensor growth = feature_growth(*down_means, anchor.at(name));
    selections.push_back({name, top_k_per_row(gdfps_scores(model.parameter(name).value(), growth), k)});
  }
  return selections;
}

}  // namespace vitune::peft
