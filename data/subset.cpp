// Class subsets, stratified subsets and prefixes.
#include "data/subset.h"

#include <algorithm>
#include <cmath>

#include "engine/random.h"

namespace vitune::data {

SubsetDataset::SubsetDataset(std::shared_ptr<const Dataset> base, std::vector<int64_t> indices,
                             std::vector<int64_t> labels, int num_classes)
    : base_(std::move(base)),
      indices_(std::move(indices)),
      labels_(std::move(labels)),
      num_classes_(num_classes) {
  VITUNE_CHECK(base_ != nullptr, "subset: no underlying dataset");
  VITUNE_CHECK(indices_.size() == labels_.size(), "subset: ", indices_.size(), " indices but ",
               labels_.size(), " labels");
  for (size_t i = 0; i < indices_.size(); ++i) {
    check_index(*base_, indices_[i], "subset");
    VITUNE_CHECK(labels_[i] >= 0 && labels_[i] < num_classes_, "subset: label ", labels_[i], " of ",
                 base_->describe(indices_[i]), " is out of range for ", num_classes_, " classes");
  }
}

int64_t SubsetDataset::label(int64_t i) const {
  check_index(*this, i, "subset");
  return labels_[size_t(i)];
}

Image SubsetDataset::load(int64_t i) const { return base_->load(base_index(i)); }

std::string SubsetDataset::describe(int64_t i) const { return base_->describe(base_index(i)); }

int64_t SubsetDataset::base_index(int64_t i) const {
  check_index(*this, i, "subset");
  return indices_[size_t(i)];
}

std::shared_ptr<SubsetDataset> class_subset(std::shared_ptr<const Dataset> base,
                                            const std::vector<int64_t>& classes) {
  VITUNE_CHECK(!classes.empty(), "class subset: no classes given");
  std::vector<int64_t> new_label(size_t(base->num_classes()), -1);
  for (size_t k = 0; k < classes.size(); ++k) {
    const int64_t c = classes[k];
    VITUNE_CHECK(c >= 0 && c < base->num_classes(), "class subset: class ", c,
                 " is out of range for a dataset of ", base->num_classes(), " classes");
    VITUNE_CHECK(new_label[size_t(c)] < 0, "class subset: class ", c, " is listed twice");
    new_label[size_t(c)] = int64_t(k);
  }
  std::vector<int64_t> indices, labels;
  for (int64_t i = 0; i < base->size(); ++i) {
    const int64_t relabelled = new_label[size_t(base->label(i))];
    if (relabelled < 0) continue;
    indices.push_back(i);
    labels.push_back(relabelled);
  }
  return std::make_shared<SubsetDataset>(std::move(base), std::move(indices), std::move(labels),
                                         int(classes.size()));
}

std::shared_ptr<SubsetDataset> stratified_subset(std::shared_ptr<const Dataset> base,
                                                 const StratifiedOptions& options) {
  const bool by_count = options.per_class >= 0;
  const bool by_ratio = options.ratio >= 0;
  VITUNE_CHECK(!(by_count && by_ratio), "stratified subset: give per_class or ratio, not both");
  VITUNE_CHECK(!by_ratio || options.ratio <= 1, "stratified subset: ratio ", options.ratio,
               " is not in [0, 1]");
  VITUNE_CHECK(
      options.part_begin >= 0 && (options.part_end < 0 || options.part_end >= options.part_begin),
      "stratified subset: part ", options.part_begin, ":", options.part_end,
      " is not a range begin:end with 0 <= begin <= end");

  std::vector<std::vector<int64_t>> members(size_t(base->num_classes()));
  for (int64_t i = 0; i < base->size(); ++i) members[size_t(base->label(i))].push_back(i);

  std::vector<int64_t> indices;
  for (size_t c = 0; c < members.size(); ++c) {
    const std::vector<int64_t>& in_class = members[c];
    const int64_t available = int64_t(in_class.size());
    int64_t kept = available;
    if (by_count) kept = options.per_class;
    if (by_ratio) kept = int64_t(std::nearbyint(options.ratio * double(available)));
    VITUNE_CHECK(kept <= available, "stratified subset: class ", c, " has ", available,
                 " examples, fewer than per_class=", kept);
    const int64_t end = options.part_end < 0 ? kept : options.part_end;
    VITUNE_CHECK(options.part_begin <= end && end <= kept, "stratified subset: part ",
                 options.part_begin, ":", end, " reaches past the ", kept,
                 " examples kept of class ", c);
    const std::vector<int64_t> order = permutation(available, options.seed, c);
    for (int64_t rank = options.part_begin; rank < end; ++rank) {
      indices.push_back(in_class[size_t(order[size_t(rank)])]);
    }
  }
  std::sort(indices.begin(), indices.end());
  std::vector<int64_t> labels(indices.size());
  for (size_t k = 0; k < indices.size(); ++k) labels[k] = base->label(indices[k]);
  return std::make_shared<SubsetDataset>(base, std::move(indices), std::move(labels),
                                         base->num_classes());
}

std::shared_ptr<SubsetDataset> first_examples(std::shared_ptr<const Dataset> base, int64_t n) {
  VITUNE_CHECK(n >= 0, "subset: limit ", n, " is negative");
  std::vector<int64_t> indices, labels;
  for (int64_t i = 0; i < std::min(n, base->size()); ++i) {
    indices.push_back(i);
    labels.push_back(base->label(i));
  }
  return std::make_shared<SubsetDataset>(base, std::move(indices), std::move(labels),
                                         base->num_classes());
}

}  // namespace vitune::data
