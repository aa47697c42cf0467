// Subsets of a dataset: a chosen list of its examples, optionally relabelled. They are
// views: loading goes to the underlying dataset, which they keep alive.
//
//  - class_subset keeps the examples of the given classes and relabels them by their
//    position in the list (classes {5, 6, 7, 8, 9} become 0..4; {3, 1} makes 3 -> 0, 1 -> 1).
//  - stratified_subset orders each class's examples by a seeded permutation (stream =
//    the class label) and keeps a range of ranks per class: the first per_class, or the
//    first round(ratio * class size) (ties to even), then optionally only ranks [part_begin,
//    part_end) of those. Which examples are taken depends on the seed and the labels only, so the
//    800/200 split of a 1000-example subset (200 per class of 5 classes) is
//    per_class=200 with part 0:160 for training and part 160:200 for validation, and
//    the two are disjoint.
//  - first_examples keeps the first n examples.
// Every subset lists its examples in the order of the underlying dataset.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "data/dataset.h"

namespace vitune::data {

class SubsetDataset : public Dataset {
 public:
  // Example i is base example indices[i] with label labels[i] in [0, num_classes).
  SubsetDataset(std::shared_ptr<const Dataset> base, std::vector<int64_t> indices,
                std::vector<int64_t> labels, int num_classes);

  int64_t size() const override { return int64_t(indices_.size()); }
  int num_classes() const override { return num_classes_; }
  int64_t label(int64_t i) const override;
  Image load(int64_t i) const override;
  std::string describe(int64_t i) const override;
  std::optional<ImageSize> fixed_size() const override { return base_->fixed_size(); }

  // The index of example i in the underlying dataset.
  int64_t base_index(int64_t i) const;

 private:
  std::shared_ptr<const Dataset> base_;
  std::vector<int64_t> indices_;
  std::vector<int64_t> labels_;
  int num_classes_ = 0;
};

std::shared_ptr<SubsetDataset> class_subset(std::shared_ptr<const Dataset> base,
                                            const std::vector<int64_t>& classes);

struct StratifiedOptions {
  int64_t per_class = -1;  // keep this many examples of each class (-1: not set)
  double ratio = -1;       // or this fraction of each class, rounded to nearest (-1: not set)
  int64_t part_begin = 0;  // then keep ranks [part_begin, part_end) of each class's kept ones
  int64_t part_end = -1;   // (-1: to the end)
  uint64_t seed = 0;
};
std::shared_ptr<SubsetDataset> stratified_subset(std::shared_ptr<const Dataset> base,
                                                 const StratifiedOptions& options);

std::shared_ptr<SubsetDataset> first_examples(std::shared_ptr<const Dataset> base, int64_t n);

}  // namespace vitune::data
