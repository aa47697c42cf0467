// The intersection ratio of two selections: |A ∩ B| / |A|, overall and per tensor,
// as the GD-FPS paper measures how stable a selection is across seeds, batch sizes
// and data ratios.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "peft/mask_file.h"

namespace vitune::peft {

struct TensorOverlap {
  std::string name;
  int64_t count_a = 0;       // entries A selects in this tensor
  int64_t count_b = 0;       // entries B selects in this tensor (0 when B does not select it)
  int64_t intersection = 0;  // entries both select
  double ratio() const;      // intersection / count_a; 1 when A selects nothing here
};

struct MaskComparison {
  std::vector<TensorOverlap> tensors;  // A's selected tensors, in A's order
  std::vector<std::string> only_in_b;  // tensors B selects and A does not
  int64_t count_a = 0, count_b = 0, intersection = 0;
  double ratio() const;                // intersection / count_a; 1 when A is empty
};

// Throws when the masks were selected on different models (different model_hash),
// naming both hashes and `name_a`, `name_b`.
MaskComparison compare_masks(const SelectionMask& a, const SelectionMask& b, const std::string& name_a,
                             const std::string& name_b);

}  // namespace vitune::peft
