// Class subsets with relabelling, stratified subsets by count and ratio, their seeded
// choice, and the disjoint 800/200-style parts.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "data/subset.h"
#include "engine/random.h"
#include "fake_dataset.h"

namespace vitune::data {
namespace {

using testing::cycling_labels;
using testing::error_of;
using testing::FakeDataset;

std::map<int64_t, int64_t> class_counts(const Dataset& dataset) {
  std::map<int64_t, int64_t> counts;
  for (int64_t i = 0; i < dataset.size(); ++i) ++counts[dataset.label(i)];
  return counts;
}

std::vector<int64_t> base_indices(const SubsetDataset& subset) {
  std::vector<int64_t> indices;
  for (int64_t i = 0; i < subset.size(); ++i) indices.push_back(subset.base_index(i));
  return indices;
}

TEST(ClassSubset, KeepsListedClassesRelabelledInListOrder) {
  auto base = std::make_shared<FakeDataset>(cycling_labels(30, 10), 10);
  const auto subset = class_subset(base, {7, 3});
  EXPECT_EQ(subset->num_classes(), 2);
  ASSERT_EQ(subset->size(), 6);
  // Base order is kept: 3, 7, 13, 17, 23, 27.
  EXPECT_EQ(base_indices(*subset), (std::vector<int64_t>{3, 7, 13, 17, 23, 27}));
  for (int64_t i = 0; i < subset->size(); ++i) {
    EXPECT_EQ(subset->label(i), subset->base_index(i) % 10 == 7 ? 0 : 1);
  }
  EXPECT_EQ(subset->describe(1), "fake/7.png");
  EXPECT_EQ(subset->load(1).pixels, base->load(7).pixels);

  const auto upper = class_subset(base, {5, 6, 7, 8, 9});
  for (int64_t i = 0; i < upper->size(); ++i) {
    EXPECT_EQ(upper->label(i), upper->base_index(i) % 10 - 5);
  }
}

TEST(ClassSubset, BadClassListsAreErrors) {
  auto base = std::make_shared<FakeDataset>(cycling_labels(10, 10), 10);
  EXPECT_NE(error_of([&] {
              class_subset(base, {2, 10});
            }).find("class 10 is out of range"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              class_subset(base, {2, 2});
            }).find("class 2 is listed twice"),
            std::string::npos);
  EXPECT_NE(error_of([&] { class_subset(base, {}); }).find("no classes"), std::string::npos);
}

TEST(StratifiedSubset, PerClassCountsAndSeededChoice) {
  auto base = std::make_shared<FakeDataset>(cycling_labels(100, 4), 4);  // 25 per class
  StratifiedOptions options;
  options.per_class = 6;
  options.seed = 11;
  const auto subset = stratified_subset(base, options);
  ASSERT_EQ(subset->size(), 24);
  for (const auto& [label, count] : class_counts(*subset)) EXPECT_EQ(count, 6) << label;
  // The examples of class c are the first 6 of permutation(25, seed, stream c).
  std::vector<int64_t> expected;
  for (int64_t c = 0; c < 4; ++c) {
    const std::vector<int64_t> order = permutation(25, 11, uint64_t(c));
    for (int k = 0; k < 6; ++k) expected.push_back(order[size_t(k)] * 4 + c);
  }
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(base_indices(*subset), expected);

  EXPECT_EQ(base_indices(*stratified_subset(base, options)), expected);  // same seed
  options.seed = 12;
  EXPECT_NE(base_indices(*stratified_subset(base, options)), expected);
}

TEST(StratifiedSubset, RatioRoundsPerClass) {
  // Class sizes 10, 7 and 3.
  std::vector<int64_t> labels;
  for (int c = 0; c < 3; ++c) labels.insert(labels.end(), std::vector<size_t>{10, 7, 3}[c], c);
  auto base = std::make_shared<FakeDataset>(labels, 3);
  StratifiedOptions options;
  options.ratio = 0.25;  // 2.5 -> 2 (ties to even), 1.75 -> 2, 0.75 -> 1
  const auto counts = class_counts(*stratified_subset(base, options));
  EXPECT_EQ(counts.at(0), 2);
  EXPECT_EQ(counts.at(1), 2);
  EXPECT_EQ(counts.at(2), 1);
}

TEST(StratifiedSubset, PartsSplitEachClassDisjointly) {
  // Like VTAB-1k's 800/200: 200 per class of 5 classes, parts 0:160 and 160:200.
  auto base = std::make_shared<FakeDataset>(cycling_labels(5 * 230, 5), 5);
  StratifiedOptions options;
  options.per_class = 200;
  options.seed = 3;
  const auto all = stratified_subset(base, options);
  options.part_begin = 0;
  options.part_end = 160;
  const auto train = stratified_subset(base, options);
  options.part_begin = 160;
  options.part_end = 200;
  const auto val = stratified_subset(base, options);
  ASSERT_EQ(train->size(), 800);
  ASSERT_EQ(val->size(), 200);
  for (const auto& [label, count] : class_counts(*train)) EXPECT_EQ(count, 160) << label;
  for (const auto& [label, count] : class_counts(*val)) EXPECT_EQ(count, 40) << label;
  std::set<int64_t> seen;
  for (int64_t i : base_indices(*train)) seen.insert(i);
  for (int64_t i : base_indices(*val)) {
    EXPECT_TRUE(seen.insert(i).second) << "example " << i << " in both";
  }
  const std::vector<int64_t> whole = base_indices(*all);
  EXPECT_EQ(std::vector<int64_t>(seen.begin(), seen.end()), whole);
}

TEST(StratifiedSubset, ImpossibleRequestsAreErrors) {
  auto base = std::make_shared<FakeDataset>(cycling_labels(20, 2), 2);  // 10 per class
  StratifiedOptions options;
  options.per_class = 11;
  EXPECT_NE(error_of([&] {
              stratified_subset(base, options);
            }).find("class 0 has 10 examples, fewer than per_class=11"),
            std::string::npos);
  options.per_class = 8;
  options.part_begin = 6;
  options.part_end = 9;
  EXPECT_NE(error_of([&] {
              stratified_subset(base, options);
            }).find("part 6:9 reaches past the 8 examples kept of class 0"),
            std::string::npos);
  options = {};
  options.per_class = 2;
  options.ratio = 0.5;
  EXPECT_NE(error_of([&] { stratified_subset(base, options); }).find("not both"),
            std::string::npos);
}

TEST(FirstExamples, KeepsAPrefix) {
  auto base = std::make_shared<FakeDataset>(cycling_labels(10, 3), 3);
  const auto subset = first_examples(base, 4);
  ASSERT_EQ(subset->size(), 4);
  EXPECT_EQ(subset->label(3), 0);
  EXPECT_EQ(subset->num_classes(), 3);
  EXPECT_EQ(first_examples(base, 50)->size(), 10);
}

}  // namespace
}  // namespace vitune::data
