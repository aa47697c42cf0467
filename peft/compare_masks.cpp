// Intersection counts of two sorted index lists, per tensor and overall.
#include "peft/compare_masks.h"

#include "engine/error.h"

namespace vitune::peft {

namespace {

// |a ∩ b| for sorted, unique i64 lists (on any device), by one merge pass on the host.
int64_t sorted_intersection(const Tensor& a_on_any, const Tensor& b_on_any) {
  const Tensor a = a_on_any.to(Device::cpu()), b = b_on_any.to(Device::cpu());
  const int64_t* x = a.data<int64_t>();
  const int64_t* y = b.data<int64_t>();
  int64_t i = 0, j = 0, common = 0;
  while (i < a.numel() && j < b.numel()) {
    if (x[i] < y[j]) {
      ++i;
    } else if (y[j] < x[i]) {
      ++j;
    } else {
      ++common;
      ++i;
      ++j;
    }
  }
  return common;
}

const std::string& model_hash_of(const SelectionMask& mask, const std::string& name) {
  auto found = mask.metadata.find("model_hash");
  VITUNE_CHECK(found != mask.metadata.end(), name, ": the mask has no model_hash");
  return found->second;
}

}  // namespace

double TensorOverlap::ratio() const { return count_a == 0 ? 1.0 : double(intersection) / double(count_a); }

double MaskComparison::ratio() const { return count_a == 0 ? 1.0 : double(intersection) / double(count_a); }

MaskComparison compare_masks(const SelectionMask& a, const SelectionMask& b, const std::string& name_a,
                             const std::string& name_b) {
  const std::string& hash_a = model_hash_of(a, name_a);
  const std::string& hash_b = model_hash_of(b, name_b);
  VITUNE_CHECK(hash_a == hash_b, "compare-masks: ", name_a, " was selected on the model with backbone hash ", hash_a,
               " and ", name_b, " on the model with hash ", hash_b, "; masks of different models cannot be compared");
  MaskComparison comparison;
  for (const auto& [name, indices] : a.selected) {
    TensorOverlap overlap;
    overlap.name = name;
    overlap.count_a = indices.numel();
    for (const auto& [other_name, other] : b.selected) {
      if (other_name != name) continue;
      overlap.count_b = other.numel();
      overlap.intersection = sorted_intersection(indices, other);
    }
    comparison.count_a += overlap.count_a;
    comparison.intersection += overlap.intersection;
    comparison.tensors.push_back(overlap);
  }
  for (const auto& [name, indices] : b.selected) {
    comparison.count_b += indices.numel();
    bool in_a = false;
    for (const auto& entry : a.selected) in_a = in_a || entry.first == name;
    if (!in_a) comparison.only_in_b.push_back(name);
  }
  return comparison;
}

}  // namespace vitune::peft
