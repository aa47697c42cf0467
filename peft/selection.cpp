// The selection policy and the per-row selection methods.
#include "peft/selection.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "engine/error.h"
#include "engine/ops.h"
#include "engine/parallel.h"
#include "engine/random.h"
#include "peft/activation_stats.h"
#include "peft/model_hash.h"

namespace vitune::peft {

SelectionPolicy SelectionPolicy::gps_default() {
  SelectionPolicy policy;
  policy.selectable = {"patch_embed.proj.weight", "blocks.*.attn.qkv.weight", "blocks.*.attn.proj.weight",
                       "blocks.*.mlp.fc1.weight", "blocks.*.mlp.fc2.weight"};
  policy.full = {"patch_embed.proj.bias", "blocks.*.attn.qkv.bias", "blocks.*.attn.proj.bias",
                 "blocks.*.mlp.fc1.bias",  "blocks.*.mlp.fc2.bias",  "head.*"};
  return policy;
}

namespace {

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

}  // namespace

std::string SelectionPolicy::describe() const {
  return "selectable=" + joined(selectable) + ";full=" + joined(full);
}

bool name_matches(const std::string& pattern, const std::string& name) {
  // Greedy wildcard matching with backtracking to the last `*`.
  size_t p = 0, n = 0, star = std::string::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (p < pattern.size() && pattern[p] == name[n]) {
      ++p;
      ++n;
    } else if (star != std::string::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

PolicyTargets resolve_policy(const nn::VisionTransformer& model, const SelectionPolicy& policy) {
  std::set<std::string> measured;
  for (const MeasuredLayer& layer : measured_layers(model)) measured.insert(layer.weight_name);
  auto check_used = [&](const std::vector<std::string>& patterns, const char* flag) {
    for (const std::string& pattern : patterns) {
      bool used = false;
      for (const nn::Parameter* p : model.parameters()) used = used || name_matches(pattern, p->name());
      VITUNE_CHECK(used, "selection policy: ", flag, " pattern \"", pattern, "\" matches no parameter of the model");
    }
  };
  check_used(policy.selectable, "--selectable");
  check_used(policy.full, "--full");
  PolicyTargets targets;
  for (const nn::Parameter* p : model.parameters()) {
    const std::string& name = p->name();
    auto picks = [&](const std::vector<std::string>& patterns) {
      return std::any_of(patterns.begin(), patterns.end(),
                         [&](const std::string& pattern) { return name_matches(pattern, name); });
    };
    const bool selectable = picks(policy.selectable), full = picks(policy.full);
    VITUNE_CHECK(!(selectable && full), "selection policy: ", name, " is picked both by --selectable and by --full");
    if (selectable) {
      VITUNE_CHECK(measured.count(name), "selection policy: --selectable picks ", name,
                   ", but only the linear weights (patch_embed.proj.weight, blocks.N.attn.qkv/proj.weight, "
                   "blocks.N.mlp.fc1/fc2.weight) are selected per row");
      targets.selectable.push_back(name);
    } else if (full) {
      targets.fully_trainable.push_back(name);
    }
  }
  VITUNE_CHECK(!targets.selectable.empty(), "selection policy: nothing is selectable");
  return targets;
}

Tensor as_rows(const Tensor& weight) {
  VITUNE_CHECK(weight.ndim() >= 2, "selection: weight ", weight.str(), " has no rows and columns");
  return weight.reshape({weight.dim(0), weight.numel() / weight.dim(0)});
}

RowSelection top_k_per_row(const Tensor& scores, int64_t k) {
  VITUNE_CHECK(scores.ndim() == 2, "top-K per row: expected scores [out, in], got ", scores.str());
  VITUNE_CHECK(k >= 1, "top-K per row: K = ", k, ", expected K >= 1");
  const int64_t rows = scores.dim(0), cols = scores.dim(1);
  const int64_t kept = std::min(k, cols);
  // Infinite scores become NaN, which topk_rows never selects. One layer's scores are
  // ranked on the host, whatever device they come from.
  Tensor finite = scores.to(Device::cpu()).to(DType::F64);
  double* values = finite.data<double>();
  for (int64_t i = 0; i < finite.numel(); ++i) {
    if (std::isinf(values[i])) values[i] = std::numeric_limits<double>::quiet_NaN();
  }
  Tensor top_values, top_indices;
  ops::topk_rows(finite, kept, top_values, top_indices);
  const int64_t* chosen = top_indices.data<int64_t>();
  std::vector<int64_t> flat;
  flat.reserve(size_t(rows * kept));
  RowSelection selection;
  std::vector<int64_t> row;
  for (int64_t j = 0; j < rows; ++j) {
    row.clear();
    for (int64_t i = 0; i < kept; ++i) {
      if (chosen[j * kept + i] >= 0) row.push_back(chosen[j * kept + i]);
    }
    if (int64_t(row.size()) < kept) ++selection.short_rows;
    std::sort(row.begin(), row.end());
    for (int64_t c : row) flat.push_back(j * cols + c);
  }
  selection.indices = Tensor::from_vector({int64_t(flat.size())}, flat, Device::cpu());
  return selection;
}

RowSelection random_per_row(int64_t rows, int64_t cols, int64_t k, uint64_t seed, uint64_t parameter_index) {
  VITUNE_CHECK(k >= 1, "random selection: K = ", k, ", expected K >= 1");
  const int64_t kept = std::min(k, cols);
  std::vector<int64_t> flat(size_t(rows * kept));
  parallel_for(rows, 1, [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      std::vector<int64_t> order = permutation(cols, seed, (parameter_index << 32) + uint64_t(j));
      std::sort(order.begin(), order.begin() + kept);
      for (int64_t i = 0; i < kept; ++i) flat[size_t(j * kept + i)] = j * cols + order[size_t(i)];
    }
  });
  RowSelection selection;
  selection.indices = Tensor::from_vector({int64_t(flat.size())}, flat, Device::cpu());
  return selection;
}

RowSelection magnitude_per_row(const Tensor& weight, int64_t k) {
  Tensor magnitude = as_rows(weight).to(Device::cpu()).to(DType::F64);
  double* values = magnitude.data<double>();
  for (int64_t i = 0; i < magnitude.numel(); ++i) values[i] = std::fabs(values[i]);
  return top_k_per_row(magnitude, k);
}

SelectionMask assemble_mask(const nn::VisionTransformer& model, const PolicyTargets& targets,
                            std::vector<TensorSelection> selections, int64_t k, const SelectionPolicy& policy,
                            std::map<std::string, std::string> metadata) {
  SelectionMask mask;
  for (const std::string& name : targets.selectable) {
    auto found = std::find_if(selections.begin(), selections.end(),
                              [&](const TensorSelection& s) { return s.name == name; });
    VITUNE_CHECK(found != selections.end(), "selection: no selection was made for ", name);
    mask.selected.emplace_back(name, found->rows.indices);
  }
  mask.fully_trainable = targets.fully_trainable;
  metadata["k"] = std::to_string(k);
  metadata["model_hash"] = backbone_hash(model);
  metadata["policy"] = policy.describe();
  mask.metadata = std::move(metadata);
  return mask;
}

}  // namespace vitune::peft
