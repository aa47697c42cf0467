// The backbone hash: stable for equal weights, sensitive to one bit of any backbone
// value, blind to the head.
#include <gtest/gtest.h>

#include <cstring>

#include "peft/model_hash.h"
#include "small_vit.h"

namespace vitune::peft {
namespace {

nn::VitConfig small_config() { return testing::small_vit_config(1, 16, 1); }

TEST(BackboneHash, EqualForEqualWeightsAndBlindToTheHead) {
  nn::VisionTransformer a(small_config(), Device::cpu()), b(small_config(), Device::cpu());
  a.init_weights(7);
  b.init_weights(7);
  EXPECT_EQ(backbone_hash(a), backbone_hash(b));
  EXPECT_EQ(backbone_hash(a).size(), 16u);
  b.reset_head(5, 99);
  EXPECT_EQ(backbone_hash(a), backbone_hash(b));
}

TEST(BackboneHash, ChangesWithOneBitOfAnyBackboneWeight) {
  nn::VisionTransformer a(small_config(), Device::cpu());
  a.init_weights(7);
  const std::string base = backbone_hash(a);
  for (nn::Parameter* p : a.parameters()) {
    if (p->name().rfind("head.", 0) == 0) continue;
    float* v = p->mutable_value().data<float>();
    uint32_t bits;
    std::memcpy(&bits, &v[p->numel() - 1], 4);
    bits ^= 1u;
    std::memcpy(&v[p->numel() - 1], &bits, 4);
    EXPECT_NE(backbone_hash(a), base) << p->name();
    bits ^= 1u;
    std::memcpy(&v[p->numel() - 1], &bits, 4);
  }
  EXPECT_EQ(backbone_hash(a), base);
}

}  // namespace
}  // namespace vitune::peft
