// Which weights a selection may pick, and how it picks them. The policy names the
// tensors selected per row (by default, as GPS does: the patch embedding and the qkv,
// proj, fc1, fc2 weights of every block), the tensors trained in full (their biases and
// the head) and leaves every other parameter frozen (LayerNorms, position embedding,
// cls token). Patterns are parameter names in which `*` matches any run of characters.
// The methods: top-K scores per output row (GD-FPS, GPS), K uniformly random columns
// per row, and the K largest |W| per row.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/tensor.h"
#include "nn/vit.h"
#include "peft/mask_file.h"

namespace vitune::peft {

struct SelectionPolicy {
  std::vector<std::string> selectable;  // selected per row: measured linear weights only
  std::vector<std::string> full;        // trained at every entry

  static SelectionPolicy gps_default();
  // "selectable=<p>,<p>;full=<p>,<p>", as recorded in masks.
  std::string describe() const;
};

// `*` matches any run of characters (possibly empty); everything else matches itself.
bool name_matches(const std::string& pattern, const std::string& name);

struct PolicyTargets {
  std::vector<std::string> selectable;       // in model parameter order
  std::vector<std::string> fully_trainable;  // in model parameter order
};
// The model's parameters each pattern picks. Throws for a pattern that matches nothing,
// a selectable name that is not a measured linear weight, or a name both lists pick.
PolicyTargets resolve_policy(const nn::VisionTransformer& model, const SelectionPolicy& policy);

struct RowSelection {
  Tensor indices;          // sorted flat indices j * in + k, i64, on the host
  int64_t short_rows = 0;  // rows that got fewer than K (non-finite scores left out)
};
// The min(K, in) largest scores of each row of `scores` [out, in] (f32 or f64, on any
// device; ranked on the host); ties go to the lower column index; NaN and infinite
// scores are never selected. The indices are on the host.
RowSelection top_k_per_row(const Tensor& scores, int64_t k);

// min(K, in) distinct columns per row, uniform, from the counter-based generator:
// row j of the tensor with model parameter index p uses permutation(in, seed,
// stream = p * 2^32 + j) and keeps its first K entries.
RowSelection random_per_row(int64_t rows, int64_t cols, int64_t k, uint64_t seed, uint64_t parameter_index);

// The min(K, in) largest |W[j, k]| of each row, ties to the lower column (the weight
// may be on any device; it is read on the host).
RowSelection magnitude_per_row(const Tensor& weight, int64_t k);

// Reads `weight` as [out, in] (a patch weight [D, C, p, p] as [D, C*p*p]).
Tensor as_rows(const Tensor& weight);

// Per selectable tensor: the selection and its count of short rows.
struct TensorSelection {
  std::string name;
  RowSelection rows;
};
// Assembles the mask: the selections in model order, the fully trainable tensors and
// the metadata (to which k, model_hash and policy are added).
SelectionMask assemble_mask(const nn::VisionTransformer& model, const PolicyTargets& targets,
                            std::vector<TensorSelection> selections, int64_t k, const SelectionPolicy& policy,
                            std::map<std::string, std::string> metadata);

}  // namespace vitune::peft
