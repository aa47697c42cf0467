// Weight deltas: what finetuning changed in a model, against the base it started from.
// Per parameter, only the entries whose bits differ are kept (an i64 index list and the
// f32 values); a parameter the base lacks or holds with another shape (the fresh head)
// is kept whole. Applying the delta to the same base gives back the finetuned model bit
// for bit. A delta records the base's backbone hash and refuses any other base.
//
// File (safetensors): "indices:<name>" i64 [n] (sorted, unique) with "values:<name>"
// f32 [n], or "whole:<name>" f32 shaped like the parameter; metadata format
// "vitune-delta", format_version, base_hash, base_head_hash, vit_config (the finetuned
// model's), changed_entries, whole_entries, sparse_tensors, whole_tensors,
// total_parameters.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/tensor.h"
#include "nn/vit.h"

namespace vitune::peft {

struct ModelDelta {
  struct Sparse {
    std::string name;
    Tensor indices;  // i64 [n], sorted and unique
    Tensor values;   // f32 [n]
  };
  std::vector<Sparse> sparse;                         // in the finetuned model's parameter order
  std::vector<std::pair<std::string, Tensor>> whole;  // ditto
  std::map<std::string, std::string> metadata;

  int64_t changed_entries() const;  // over the sparse tensors
  int64_t whole_entries() const;
};

// The delta that turns `base` into `finetuned`. Every parameter of the base must exist
// in the finetuned model; both must be f32 (as loaded models are). The models may be on
// any devices; the delta's tensors are on the host.
ModelDelta make_delta(const nn::VisionTransformer& base, const nn::VisionTransformer& finetuned);

// Written atomically.
void save_delta(const std::string& path, const ModelDelta& delta);
// Reads and checks a delta file: names, dtypes, ranks, sorted unique non-negative
// indices and matching value counts, metadata; errors name `path` and the tensor.
ModelDelta load_delta(const std::string& path);

// The finetuned model rebuilt from `base` and `delta`. Refuses a base whose backbone
// (or, when the delta has sparse head entries, head) differs from the one the delta was
// made against, and checks every index against its parameter's size and every whole
// tensor's shape; `source` names the delta in errors. The rebuilt model is on the
// base's device.
std::unique_ptr<nn::VisionTransformer> apply_delta(const nn::VisionTransformer& base, const ModelDelta& delta,
                                                   const std::string& source);

}  // namespace vitune::peft
