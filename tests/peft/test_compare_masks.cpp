// The intersection ratio by hand: per tensor and overall, tensors only one mask
// selects, and masks of different models refused.
#include <gtest/gtest.h>

#include "peft/compare_masks.h"

namespace vitune::peft {
namespace {

SelectionMask make_mask(const std::string& hash, std::vector<std::pair<std::string, std::vector<int64_t>>> lists) {
  SelectionMask mask;
  for (auto& [name, list] : lists) {
    mask.selected.emplace_back(name, Tensor::from_vector<int64_t>({int64_t(list.size())}, list, Device::cpu()));
  }
  mask.metadata["model_hash"] = hash;
  return mask;
}

TEST(CompareMasks, IntersectionRatioPerTensorAndOverall) {
  const SelectionMask a = make_mask("h", {{"w1", {0, 2, 4, 6}}, {"w2", {1, 3}}, {"w3", {5}}});
  const SelectionMask b = make_mask("h", {{"w1", {2, 3, 4, 7}}, {"w2", {1, 3, 9}}, {"w4", {0}}});
  const MaskComparison c = compare_masks(a, b, "a.safetensors", "b.safetensors");
  ASSERT_EQ(c.tensors.size(), 3u);
  EXPECT_EQ(c.tensors[0].intersection, 2);  // {2, 4}
  EXPECT_DOUBLE_EQ(c.tensors[0].ratio(), 0.5);
  EXPECT_EQ(c.tensors[1].intersection, 2);
  EXPECT_EQ(c.tensors[1].count_b, 3);
  EXPECT_DOUBLE_EQ(c.tensors[1].ratio(), 1.0);
  EXPECT_EQ(c.tensors[2].count_b, 0);  // B does not select w3
  EXPECT_DOUBLE_EQ(c.tensors[2].ratio(), 0.0);
  EXPECT_EQ(c.count_a, 7);
  EXPECT_EQ(c.count_b, 8);
  EXPECT_EQ(c.intersection, 4);
  EXPECT_DOUBLE_EQ(c.ratio(), 4.0 / 7.0);
  EXPECT_EQ(c.only_in_b, std::vector<std::string>{"w4"});
}

TEST(CompareMasks, AMaskAgainstItselfIsOne) {
  const SelectionMask a = make_mask("h", {{"w1", {0, 5, 9}}});
  EXPECT_DOUBLE_EQ(compare_masks(a, a, "a", "a").ratio(), 1.0);
}

TEST(CompareMasks, RefusesMasksOfDifferentModels) {
  const SelectionMask a = make_mask("0123456789abcdef", {{"w1", {0}}});
  const SelectionMask b = make_mask("fedcba9876543210", {{"w1", {0}}});
  try {
    compare_masks(a, b, "a.safetensors", "b.safetensors");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("0123456789abcdef"), std::string::npos) << message;
    EXPECT_NE(message.find("fedcba9876543210"), std::string::npos) << message;
    EXPECT_NE(message.find("b.safetensors"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace vitune::peft
