// Weight deltas, with the models on every device: only changed entries are stored (a
// bitwise compare, so -0 against +0 counts), a reshaped head is stored whole, the round
// trip through a file rebuilds the finetuned model bit for bit, and bad deltas or a
// wrong base are clear errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "nn/checkpoint.h"
#include "nn/safetensors.h"
#include "peft/delta.h"
#include "device_test.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

// The tiny ViT on the host; edit(model) changes its values there, then it moves to `device`.
std::unique_ptr<nn::VisionTransformer> tiny(Device device = Device::cpu(),
                                            const std::function<void(nn::VisionTransformer&)>& edit = {}) {
  auto model = nn::load_vit(data_path("tiny_vit.safetensors"), Device::cpu()).model;
  if (edit) edit(*model);
  model->to(device);
  return model;
}

// The tiny ViT "finetuned": a new 5-class head, a few changed entries, one +0 -> -0.
std::unique_ptr<nn::VisionTransformer> finetuned(Device device = Device::cpu(),
                                                 const std::function<void(nn::VisionTransformer&)>& edit = {}) {
  auto model = tiny();
  model->reset_head(5, 9);
  float* qkv = model->parameter("blocks.0.attn.qkv.weight").mutable_value().data<float>();
  qkv[0] += 0.25f;
  qkv[777] = -qkv[777];
  float* bias = model->parameter("blocks.1.mlp.fc2.bias").mutable_value().data<float>();
  bias[31] *= 1.0f + 1e-7f;
  float* cls = model->parameter("cls_token").mutable_value().data<float>();
  cls[3] = 0.0f;
  if (edit) edit(*model);
  model->to(device);
  return model;
}

class Delta : public OnDevice {};

void expect_bitwise_same_model(const nn::VisionTransformer& actual, const nn::VisionTransformer& expected) {
  ASSERT_EQ(actual.parameters().size(), expected.parameters().size());
  for (size_t i = 0; i < expected.parameters().size(); ++i) {
    const nn::Parameter& e = *expected.parameters()[i];
    const nn::Parameter& a = *actual.parameters()[i];
    EXPECT_EQ(a.name(), e.name());
    EXPECT_TRUE(bitwise_equal(a.value(), e.value())) << e.name();
  }
}

TEST_P(Delta, StoresOnlyTheChangedEntriesAndTheNewHeadWhole) {
  // Start from a cls entry of +0 so that the -0 written below is a change of bits only.
  auto base = tiny(device(), [](nn::VisionTransformer& m) { m.parameter("cls_token").mutable_value().data<float>()[3] = 0.0f; });
  auto model = finetuned(device(), [](nn::VisionTransformer& m) { m.parameter("cls_token").mutable_value().data<float>()[3] = -0.0f; });
  peft::ModelDelta delta = peft::make_delta(*base, *model);
  ASSERT_EQ(delta.sparse.size(), 3u);
  EXPECT_EQ(delta.sparse[0].name, "cls_token");
  EXPECT_EQ(delta.sparse[0].indices.to_vector<int64_t>(), std::vector<int64_t>({3}));
  EXPECT_TRUE(std::signbit(delta.sparse[0].values.data<float>()[0]));
  EXPECT_EQ(delta.sparse[1].name, "blocks.0.attn.qkv.weight");
  EXPECT_EQ(delta.sparse[1].indices.to_vector<int64_t>(), std::vector<int64_t>({0, 777}));
  EXPECT_EQ(delta.sparse[2].name, "blocks.1.mlp.fc2.bias");
  EXPECT_EQ(delta.sparse[2].indices.to_vector<int64_t>(), std::vector<int64_t>({31}));
  ASSERT_EQ(delta.whole.size(), 2u);
  EXPECT_EQ(delta.whole[0].first, "head.weight");
  EXPECT_EQ(delta.whole[0].second.shape(), Shape({5, 32}));
  EXPECT_EQ(delta.changed_entries(), 4);
  EXPECT_EQ(delta.whole_entries(), 5 * 32 + 5);
  EXPECT_EQ(delta.metadata.at("changed_entries"), "4");
}

TEST_P(Delta, RoundTripThroughAFileIsBitExact) {
  auto base = tiny(device());
  auto model = finetuned(device());
  TempPath path("delta_round_trip", ".safetensors");
  peft::save_delta(path.str(), peft::make_delta(*base, *model));
  peft::ModelDelta loaded = peft::load_delta(path.str());
  auto rebuilt = peft::apply_delta(*base, loaded, path.str());
  EXPECT_EQ(rebuilt->config().num_classes, 5);
  expect_bitwise_same_model(*rebuilt, *model);
  // An unchanged model gives an empty delta that rebuilds the base.
  peft::ModelDelta empty = peft::make_delta(*base, *base);
  EXPECT_TRUE(empty.sparse.empty() && empty.whole.empty());
  expect_bitwise_same_model(*peft::apply_delta(*base, empty, "empty"), *base);
}

TEST_P(Delta, RefusesAnotherBase) {
  auto base = tiny(device());
  peft::ModelDelta delta = peft::make_delta(*base, *finetuned(device()));
  auto other = tiny(device(), [](nn::VisionTransformer& m) {
    m.parameter("blocks.1.norm2.weight").mutable_value().data<float>()[0] += 1.0f;
  });
  try {
    peft::apply_delta(*other, delta, "d.safetensors");
    FAIL() << "a delta applied to another base";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("backbone hash"), std::string::npos) << e.what();
  }
  // Same backbone, but the delta changes head entries relative to a different head.
  auto same_shape_head = tiny(device(), [](nn::VisionTransformer& m) {
    m.parameter("head.weight").mutable_value().data<float>()[1] += 1.0f;
  });
  peft::ModelDelta head_delta = peft::make_delta(*base, *same_shape_head);
  ASSERT_EQ(head_delta.sparse.size(), 1u);
  auto other_head = tiny(device(), [](nn::VisionTransformer& m) {
    m.parameter("head.bias").mutable_value().data<float>()[0] += 1.0f;
  });
  EXPECT_THROW(peft::apply_delta(*other_head, head_delta, "d"), Error);
  expect_bitwise_same_model(*peft::apply_delta(*base, head_delta, "d"), *same_shape_head);
}

// A delta file with one thing wrong must fail to load or apply, naming the tensor.
void expect_bad_delta(const std::string& what, const std::function<void(nn::SafetensorsFile&)>& spoil,
                      const std::string& expected_message) {
  auto base = tiny();
  TempPath good("delta_good", ".safetensors"), bad("delta_bad", ".safetensors");
  peft::save_delta(good.str(), peft::make_delta(*base, *finetuned()));
  nn::SafetensorsFile file = nn::read_safetensors(good.str());
  spoil(file);
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const std::string& name : file.names) {
    if (file.tensors.count(name)) tensors.emplace_back(name, file.tensors.at(name));
  }
  nn::write_safetensors(bad.str(), tensors, file.metadata);
  try {
    peft::apply_delta(*base, peft::load_delta(bad.str()), bad.str());
    ADD_FAILURE() << what << ": accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(expected_message), std::string::npos) << what << ": " << e.what();
  }
}

TEST(DeltaFiles, BadDeltaFilesAreClearErrors) {
  const std::string qkv = "blocks.0.attn.qkv.weight";
  expect_bad_delta("unsorted indices", [&](nn::SafetensorsFile& f) {
    f.tensors["indices:" + qkv] = Tensor::from_vector<int64_t>({2}, {777, 0}, Device::cpu());
  }, "not sorted and unique");
  expect_bad_delta("duplicate index", [&](nn::SafetensorsFile& f) {
    f.tensors["indices:" + qkv] = Tensor::from_vector<int64_t>({2}, {5, 5}, Device::cpu());
  }, "not sorted and unique");
  expect_bad_delta("index out of range", [&](nn::SafetensorsFile& f) {
    f.tensors["indices:" + qkv] = Tensor::from_vector<int64_t>({2}, {0, 96 * 32}, Device::cpu());
  }, "beyond the 3072 entries");
  expect_bad_delta("negative index", [&](nn::SafetensorsFile& f) {
    f.tensors["indices:" + qkv] = Tensor::from_vector<int64_t>({2}, {-1, 3}, Device::cpu());
  }, "negative index");
  expect_bad_delta("values count", [&](nn::SafetensorsFile& f) {
    f.tensors["values:" + qkv] = Tensor::from_vector<float>({3}, {1, 2, 3}, Device::cpu());
  }, "to match its indices");
  expect_bad_delta("index dtype", [&](nn::SafetensorsFile& f) {
    f.tensors["indices:" + qkv] = Tensor::from_vector<float>({2}, {0, 777}, Device::cpu());
  }, "1-D i64 index list");
  expect_bad_delta("unknown tensor", [&](nn::SafetensorsFile& f) {
    f.tensors["indices:blocks.9.attn.qkv.weight"] = Tensor::from_vector<int64_t>({1}, {0}, Device::cpu());
    f.tensors["values:blocks.9.attn.qkv.weight"] = Tensor::from_vector<float>({1}, {0}, Device::cpu());
    f.names.push_back("indices:blocks.9.attn.qkv.weight");
    f.names.push_back("values:blocks.9.attn.qkv.weight");
    f.metadata["changed_entries"] = "5";
  }, "names no parameter");
  expect_bad_delta("whole tensor shape", [&](nn::SafetensorsFile& f) {
    f.tensors["whole:head.weight"] = Tensor::zeros({4, 32}, DType::F32, Device::cpu());
    f.metadata["whole_entries"] = std::to_string(4 * 32 + 5);
  }, "whole:head.weight");
  expect_bad_delta("stray name", [&](nn::SafetensorsFile& f) {
    f.tensors["head.weight"] = Tensor::zeros({5, 32}, DType::F32, Device::cpu());
    f.names.push_back("head.weight");
  }, "neither");
  expect_bad_delta("counts", [&](nn::SafetensorsFile& f) { f.metadata["changed_entries"] = "7"; },
                   "do not match the tensors");
  expect_bad_delta("missing hash", [&](nn::SafetensorsFile& f) { f.metadata.erase("base_hash"); }, "base_hash");
  expect_bad_delta("not a delta", [&](nn::SafetensorsFile& f) { f.metadata["format"] = "vitune-selection-mask"; },
                   "not a vitune delta");
  expect_bad_delta("changed value", [&](nn::SafetensorsFile& f) {
    f.tensors["values:" + qkv] = Tensor::from_vector<float>({2}, {1e3f, 1e3f}, Device::cpu());
  }, "rebuilt model's backbone hash");
}

VITUNE_ON_EVERY_DEVICE(Delta);

}  // namespace
}  // namespace vitune::testing
