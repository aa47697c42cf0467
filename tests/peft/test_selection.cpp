// Per-row selection: ties to the lower column, NaN and infinite scores never selected,
// the zero-anchor rule of the growth, magnitude against a naive sort, random selection
// per seed, name patterns and the default policy.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "peft/gdfps.h"
#include "peft/selection.h"
#include "test_util.h"
#include "small_vit.h"

namespace vitune::peft {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<int64_t> indices_of(const RowSelection& s) { return s.indices.to_vector<int64_t>(); }

nn::VitConfig small_config() { return testing::small_vit_config(1, 16, 2); }

TEST(TopKPerRow, TiesGoToTheLowerColumn) {
  // Row 0: 2.0 at columns 1, 2 and 3; K = 2 takes columns 1 and 2.
  // Row 1: all equal; K = 2 takes columns 0 and 1.
  const Tensor scores = Tensor::from_vector<double>({2, 4}, {1, 2, 2, 2, 5, 5, 5, 5}, Device::cpu());
  const RowSelection s = top_k_per_row(scores, 2);
  EXPECT_EQ(indices_of(s), (std::vector<int64_t>{1, 2, 4, 5}));
  EXPECT_EQ(s.short_rows, 0);
}

TEST(TopKPerRow, NaNAndInfiniteScoresAreNeverSelected) {
  const Tensor scores =
      Tensor::from_vector<double>({3, 4}, {kInf, 1, kNaN, 0.5, -kInf, -3, -1, kNaN, kNaN, kInf, -kInf, 7}, Device::cpu());
  const RowSelection s = top_k_per_row(scores, 3);
  // Row 0: finite 1 (col 1), 0.5 (col 3) -> short. Row 1: -1, -3 -> short. Row 2: 7 -> short.
  EXPECT_EQ(indices_of(s), (std::vector<int64_t>{1, 3, 5, 6, 11}));
  EXPECT_EQ(s.short_rows, 3);
}

TEST(TopKPerRow, MatchesANaiveSortAndClampsKToTheRowLength) {
  const Tensor scores = testing::random_normal({7, 9}, DType::F32, 3, 0);
  for (int64_t k : {1, 4, 9, 20}) {
    std::vector<int64_t> expected;
    for (int64_t j = 0; j < 7; ++j) {
      std::vector<int64_t> cols(9);
      for (int64_t c = 0; c < 9; ++c) cols[size_t(c)] = c;
      std::stable_sort(cols.begin(), cols.end(),
                       [&](int64_t a, int64_t b) { return scores.item(j * 9 + a) > scores.item(j * 9 + b); });
      cols.resize(size_t(std::min<int64_t>(k, 9)));
      std::sort(cols.begin(), cols.end());
      for (int64_t c : cols) expected.push_back(j * 9 + c);
    }
    EXPECT_EQ(indices_of(top_k_per_row(scores, k)), expected) << "K = " << k;
  }
}

TEST(MagnitudeSelection, TakesTheLargestAbsoluteWeightsOfEachRow) {
  // A patch-shaped weight [2, 1, 2, 2] read as [2, 4].
  const Tensor weight = Tensor::from_vector<float>({2, 1, 2, 2}, {0.5f, -3, 2, -0.1f, 1, -1, 0.25f, 1}, Device::cpu());
  // Row 0: |-3| (col 1), 2 (col 2). Row 1: 1, -1, 1 tie; K = 2 keeps cols 0 and 1.
  EXPECT_EQ(indices_of(magnitude_per_row(weight, 2)), (std::vector<int64_t>{1, 2, 4, 5}));
}

TEST(FeatureGrowth, ZeroAnchorRule) {
  const Tensor down = Tensor::from_vector<double>({4}, {3, 0, 2, 0.5}, Device::cpu());
  const Tensor anchor = Tensor::from_vector<double>({4}, {1.5, 0, 0, 1}, Device::cpu());
  const Tensor growth = feature_growth(down, anchor);
  EXPECT_EQ(growth.item(0), 1.0);   // 3 / 1.5 - 1
  EXPECT_EQ(growth.item(1), 0.0);   // 0 / 0: no growth
  EXPECT_EQ(growth.item(2), kInf);  // unbounded growth: never selected
  EXPECT_EQ(growth.item(3), -0.5);  // shrinking feature: negative
  // W row [2, 1, 4, 8] -> scores [2, 0, inf, -4]; K = 3 takes columns 0, 1, 3.
  const Tensor weight = Tensor::from_vector<float>({1, 4}, {-2, 1, 4, 8}, Device::cpu());
  const Tensor scores = gdfps_scores(weight, growth);
  EXPECT_EQ(scores.item(0), 2.0);
  EXPECT_EQ(scores.item(3), -4.0);
  const RowSelection s = top_k_per_row(scores, 3);
  EXPECT_EQ(indices_of(s), (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(s.short_rows, 0);
  EXPECT_EQ(top_k_per_row(scores, 4).short_rows, 1);
}

TEST(FeatureGrowth, RejectsMismatchedStatistics) {
  EXPECT_THROW(feature_growth(Tensor::zeros({3}, DType::F64, Device::cpu()), Tensor::zeros({4}, DType::F64, Device::cpu())), Error);
  EXPECT_THROW(feature_growth(Tensor::zeros({3}, DType::F32, Device::cpu()), Tensor::zeros({3}, DType::F32, Device::cpu())), Error);
  EXPECT_THROW(gdfps_scores(Tensor::zeros({2, 5}, DType::F32, Device::cpu()), Tensor::zeros({4}, DType::F64, Device::cpu())), Error);
}

TEST(RandomSelection, DeterministicPerSeedAndDifferentAcrossSeeds) {
  const RowSelection a = random_per_row(6, 50, 7, 11, 3);
  const RowSelection b = random_per_row(6, 50, 7, 11, 3);
  const RowSelection c = random_per_row(6, 50, 7, 12, 3);
  const RowSelection d = random_per_row(6, 50, 7, 11, 4);
  EXPECT_TRUE(testing::bitwise_equal(a.indices, b.indices));
  EXPECT_FALSE(testing::bitwise_equal(a.indices, c.indices));
  EXPECT_FALSE(testing::bitwise_equal(a.indices, d.indices));
  const std::vector<int64_t> flat = indices_of(a);
  ASSERT_EQ(flat.size(), 42u);
  for (int64_t j = 0; j < 6; ++j) {
    for (int64_t i = 0; i < 7; ++i) {
      const int64_t index = flat[size_t(j * 7 + i)];
      EXPECT_EQ(index / 50, j);  // K entries in every row
      if (i > 0) {
        EXPECT_LT(flat[size_t(j * 7 + i - 1)], index);
      }
    }
  }
  {
    testing::ThreadCount one(1);
    EXPECT_TRUE(testing::bitwise_equal(random_per_row(6, 50, 7, 11, 3).indices, a.indices));
  }
}

TEST(RandomSelection, CoversColumnsRoughlyUniformly) {
  // 2000 rows of 10 columns, K = 3: each column is picked with probability 0.3.
  const std::vector<int64_t> flat = random_per_row(2000, 10, 3, 5, 0).indices.to_vector<int64_t>();
  std::vector<int> hits(10, 0);
  for (int64_t index : flat) ++hits[size_t(index % 10)];
  for (int h : hits) EXPECT_NEAR(h, 600, 90);  // 4.6 standard deviations
}

TEST(SelectionPolicy, NamePatterns) {
  EXPECT_TRUE(name_matches("blocks.*.attn.qkv.weight", "blocks.11.attn.qkv.weight"));
  EXPECT_FALSE(name_matches("blocks.*.attn.qkv.weight", "blocks.1.attn.qkv.bias"));
  EXPECT_TRUE(name_matches("head.*", "head.weight"));
  EXPECT_TRUE(name_matches("*", "cls_token"));
  EXPECT_TRUE(name_matches("*.bias", "blocks.0.norm1.bias"));
  EXPECT_FALSE(name_matches("norm.weight", "blocks.0.norm1.weight"));
  EXPECT_TRUE(name_matches("a*b*c", "aXbYbZc"));
  EXPECT_FALSE(name_matches("a*b*c", "aXbYcZ"));
}

TEST(SelectionPolicy, DefaultSelectsLinearWeightsAndTrainsTheirBiasesAndTheHead) {
  nn::VisionTransformer model(small_config(), Device::cpu());
  const PolicyTargets targets = resolve_policy(model, SelectionPolicy::gps_default());
  EXPECT_EQ(targets.selectable,
            (std::vector<std::string>{"patch_embed.proj.weight", "blocks.0.attn.qkv.weight",
                                      "blocks.0.attn.proj.weight", "blocks.0.mlp.fc1.weight",
                                      "blocks.0.mlp.fc2.weight", "blocks.1.attn.qkv.weight",
                                      "blocks.1.attn.proj.weight", "blocks.1.mlp.fc1.weight",
                                      "blocks.1.mlp.fc2.weight"}));
  const std::set<std::string> full(targets.fully_trainable.begin(), targets.fully_trainable.end());
  EXPECT_EQ(full.size(), 11u);  // patch bias, 4 biases per block, head weight and bias
  EXPECT_TRUE(full.count("head.weight") && full.count("blocks.1.mlp.fc2.bias") && full.count("patch_embed.proj.bias"));
  for (const char* frozen : {"cls_token", "pos_embed", "blocks.0.norm1.weight", "blocks.0.norm1.bias", "norm.bias"}) {
    EXPECT_FALSE(full.count(frozen)) << frozen;
  }
}

TEST(SelectionPolicy, RejectsPatternsThatMatchNothingOverlapOrSelectNonLinearWeights) {
  nn::VisionTransformer model(small_config(), Device::cpu());
  SelectionPolicy typo = SelectionPolicy::gps_default();
  typo.full.push_back("blocks.*.mlp.fc3.bias");
  EXPECT_THROW(resolve_policy(model, typo), Error);
  SelectionPolicy overlap = SelectionPolicy::gps_default();
  overlap.full.push_back("blocks.0.*");
  EXPECT_THROW(resolve_policy(model, overlap), Error);
  SelectionPolicy norm = SelectionPolicy::gps_default();
  norm.selectable.push_back("norm.weight");
  EXPECT_THROW(resolve_policy(model, norm), Error);
}

TEST(SelectionPolicy, AssembledMaskRecordsTheSelectionAndMetadata) {
  nn::VisionTransformer model(small_config(), Device::cpu());
  model.init_weights(3);
  const SelectionPolicy policy = SelectionPolicy::gps_default();
  const PolicyTargets targets = resolve_policy(model, policy);
  std::vector<TensorSelection> selections;
  for (const std::string& name : targets.selectable) {
    selections.push_back({name, top_k_per_row(as_rows(model.parameter(name).value()).to(DType::F64), 2)});
  }
  const SelectionMask mask = assemble_mask(model, targets, selections, 2, policy, {{"method", "magnitude"}});
  ASSERT_EQ(mask.selected.size(), targets.selectable.size());
  EXPECT_EQ(mask.selected.front().first, "patch_embed.proj.weight");
  EXPECT_EQ(mask.selected.front().second.numel(), 16 * 2);  // D rows, K each
  EXPECT_EQ(mask.metadata.at("k"), "2");
  EXPECT_EQ(mask.metadata.at("method"), "magnitude");
  EXPECT_EQ(mask.metadata.at("policy"), policy.describe());
  EXPECT_EQ(mask.metadata.at("model_hash").size(), 16u);
}

}  // namespace
}  // namespace vitune::peft
