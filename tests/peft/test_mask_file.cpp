// The mask file: a round trip keeps every index, name and metadata entry; each kind of
// bad file (unsorted, duplicate, negative or out-of-range indices, wrong dtype or rank,
// missing metadata, another model) is refused with an error naming the file and tensor.
#include <gtest/gtest.h>

#include "nn/safetensors.h"
#include "peft/mask_file.h"
#include "peft/model_hash.h"
#include "test_util.h"
#include "small_vit.h"

namespace vitune::peft {
namespace {

using testing::TempPath;

nn::VitConfig small_config() { return testing::small_vit_config(1, 8, 1); }

struct MaskFixture : ::testing::Test {
  MaskFixture() : model(small_config(), Device::cpu()) {
    model.init_weights(5);
    mask.selected = {{"blocks.0.attn.qkv.weight", Tensor::from_vector<int64_t>({3}, {0, 9, 191}, Device::cpu())},
                     {"blocks.0.mlp.fc2.weight", Tensor::from_vector<int64_t>({2}, {4, 5}, Device::cpu())}};
    mask.fully_trainable = {"blocks.0.mlp.fc2.bias", "head.weight", "head.bias"};
    mask.metadata = {{"method", "gdfps"}, {"k", "2"}, {"model_hash", backbone_hash(model)}, {"seed", "0"}};
  }

  // Writes the mask's tensors with a modification and the full metadata.
  void write_raw_mask(const std::vector<std::pair<std::string, Tensor>>& tensors,
                      std::map<std::string, std::string> metadata) {
    nn::write_safetensors(path.str(), tensors, metadata);
  }
  std::map<std::string, std::string> file_metadata() const {
    std::map<std::string, std::string> m = mask.metadata;
    m["format"] = "vitune-selection-mask";
    m["format_version"] = "1";
    m["fully_trainable"] = R"(["blocks.0.mlp.fc2.bias","head.weight","head.bias"])";
    return m;
  }
  void expect_load_error(const std::string& needle) {
    try {
      load_mask(path.str());
      FAIL() << "expected an error containing \"" << needle << "\"";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(path.str()), std::string::npos) << message;
      EXPECT_NE(message.find(needle), std::string::npos) << message;
    }
  }

  nn::VisionTransformer model;
  SelectionMask mask;
  TempPath path{"mask", ".safetensors"};
};

TEST_F(MaskFixture, RoundTripKeepsEverything) {
  save_mask(path.str(), mask);
  const SelectionMask back = load_mask(path.str());
  ASSERT_EQ(back.selected.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back.selected[i].first, mask.selected[i].first);
    EXPECT_TRUE(testing::bitwise_equal(back.selected[i].second, mask.selected[i].second));
  }
  EXPECT_EQ(back.fully_trainable, mask.fully_trainable);
  for (const auto& [key, value] : mask.metadata) EXPECT_EQ(back.metadata.at(key), value) << key;
  EXPECT_EQ(back.selected_count(), 5);
}

TEST_F(MaskFixture, ApplySetsEveryFreezeState) {
  apply_mask(model, mask, "mask file");
  EXPECT_EQ(model.parameter("blocks.0.attn.qkv.weight").state(), nn::FreezeState::Masked);
  EXPECT_EQ(model.parameter("blocks.0.attn.qkv.weight").trainable_count(), 3);
  EXPECT_EQ(model.parameter("blocks.0.mlp.fc2.weight").trainable_count(), 2);
  EXPECT_EQ(model.parameter("head.bias").state(), nn::FreezeState::Trainable);
  EXPECT_EQ(model.parameter("blocks.0.mlp.fc2.bias").state(), nn::FreezeState::Trainable);
  for (const char* frozen : {"cls_token", "pos_embed", "blocks.0.norm1.weight", "blocks.0.attn.qkv.bias",
                             "patch_embed.proj.weight"}) {
    EXPECT_EQ(model.parameter(frozen).state(), nn::FreezeState::Frozen) << frozen;
  }
}

TEST_F(MaskFixture, RefusesUnsortedIndices) {
  write_raw_mask({{"blocks.0.attn.qkv.weight", Tensor::from_vector<int64_t>({3}, {0, 12, 9}, Device::cpu())}}, file_metadata());
  expect_load_error("not sorted");
}

TEST_F(MaskFixture, RefusesDuplicateIndices) {
  write_raw_mask({{"blocks.0.attn.qkv.weight", Tensor::from_vector<int64_t>({3}, {0, 9, 9}, Device::cpu())}}, file_metadata());
  expect_load_error("repeats index 9");
}

TEST_F(MaskFixture, RefusesNegativeIndices) {
  write_raw_mask({{"blocks.0.attn.qkv.weight", Tensor::from_vector<int64_t>({2}, {-1, 9}, Device::cpu())}}, file_metadata());
  expect_load_error("negative index -1");
}

TEST_F(MaskFixture, RefusesAWrongDtypeOrRank) {
  write_raw_mask({{"blocks.0.attn.qkv.weight", Tensor::from_vector<float>({2}, {0, 9}, Device::cpu())}}, file_metadata());
  expect_load_error("expected i64[n]");
  write_raw_mask({{"blocks.0.attn.qkv.weight", Tensor::from_vector<int64_t>({1, 2}, {0, 9}, Device::cpu())}}, file_metadata());
  expect_load_error("expected i64[n]");
}

TEST_F(MaskFixture, RefusesMissingMetadata) {
  for (const char* key : {"method", "k", "model_hash", "fully_trainable", "format"}) {
    std::map<std::string, std::string> metadata = file_metadata();
    metadata.erase(key);
    write_raw_mask(mask.selected, metadata);
    expect_load_error(std::string("\"") + key + "\" is missing");
  }
}

TEST_F(MaskFixture, RefusesOutOfRangeIndicesWhenApplied) {
  mask.selected[0].second = Tensor::from_vector<int64_t>({2}, {3, 192}, Device::cpu());  // qkv has 24 x 8 = 192 entries
  save_mask(path.str(), mask);
  const SelectionMask back = load_mask(path.str());
  try {
    apply_mask(model, back, path.str());
    FAIL() << "expected an out-of-range error";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("index 192"), std::string::npos) << message;
    EXPECT_NE(message.find("blocks.0.attn.qkv.weight"), std::string::npos) << message;
    EXPECT_NE(message.find(path.str()), std::string::npos) << message;
  }
}

TEST_F(MaskFixture, RefusesAnotherModel) {
  save_mask(path.str(), mask);
  nn::VisionTransformer other(small_config(), Device::cpu());
  other.init_weights(6);
  try {
    apply_mask(other, load_mask(path.str()), path.str());
    FAIL() << "expected a model hash error";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(backbone_hash(model)), std::string::npos) << message;
    EXPECT_NE(message.find(backbone_hash(other)), std::string::npos) << message;
  }
  EXPECT_EQ(other.parameter("head.bias").state(), nn::FreezeState::Trainable);  // untouched
}

TEST_F(MaskFixture, RefusesUnknownTensorNames) {
  mask.selected[0].first = "blocks.3.attn.qkv.weight";
  EXPECT_THROW(apply_mask(model, mask, "mask file"), Error);
}

}  // namespace
}  // namespace vitune::peft
