// The anchor file: a round trip keeps the statistics bit for bit and the metadata; a
// file made on another model names both hashes and the file; missing layers, wrong
// dtypes and negative means are refused. And measure_activations, which fetches batches
// ahead off the cpu, gives the cpu's bits on the emulated device.
#include <gtest/gtest.h>

#include "data/loader.h"
#include "data/transform_presets.h"
#include "engine/random.h"
#include "nn/safetensors.h"
#include "peft/anchor.h"
#include "peft/model_hash.h"
#include "test_util.h"
#include "small_vit.h"

namespace vitune::peft {
namespace {

using testing::TempPath;

nn::VitConfig small_config() { return testing::small_vit_config(2, 8, 2); }

struct AnchorFixture : ::testing::Test {
  AnchorFixture() : model(small_config(), Device::cpu()), stats(model) {
    model.init_weights(9);
    stats.add_batch(testing::random_normal({3, 2, 8, 8}, DType::F32, 4, 0));
  }
  void expect_error(const std::vector<std::string>& needles) {
    try {
      load_anchor(path.str(), model);
      FAIL() << "expected an error";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(path.str()), std::string::npos) << message;
      for (const std::string& needle : needles) EXPECT_NE(message.find(needle), std::string::npos) << message;
    }
  }
  nn::VisionTransformer model;
  ActivationStats stats;
  TempPath path{"anchor", ".safetensors"};
};

TEST_F(AnchorFixture, MeanIsTheAverageAbsoluteInputOverTokensAndImages) {
  // The patch embedding's input by hand: feature (c, r, s) of patch (py, px) is
  // pixel (c, 4 py + r, 4 px + s); 3 images x 4 patches.
  const Tensor images = testing::random_normal({3, 2, 8, 8}, DType::F32, 4, 0);
  std::vector<double> expected(32, 0.0);
  for (int b = 0; b < 3; ++b)
    for (int c = 0; c < 2; ++c)
      for (int y = 0; y < 8; ++y)
        for (int x = 0; x < 8; ++x)
          expected[size_t(c * 16 + (y % 4) * 4 + x % 4)] += std::fabs(images.item(((b * 2 + c) * 8 + y) * 8 + x)) / 12;
  const auto means = stats.means();
  EXPECT_EQ(means[0].first, "patch_embed.proj.weight");
  EXPECT_TRUE(testing::tensors_close(means[0].second, Tensor::from_vector({32}, expected, Device::cpu()), testing::kF64Exact));
  EXPECT_EQ(means.size(), 9u);
  EXPECT_EQ(means[8].first, "blocks.1.mlp.fc2.weight");
  EXPECT_EQ(means[8].second.dim(0), 32);  // hidden = 4 * dim
}

TEST_F(AnchorFixture, RoundTripKeepsTheBitsAndMetadata) {
  save_anchor(path.str(), stats, backbone_hash(model), "idx:x?limit=3");
  const Anchor anchor = load_anchor(path.str(), model);
  const auto means = stats.means();
  ASSERT_EQ(anchor.means.size(), means.size());
  for (size_t i = 0; i < means.size(); ++i) {
    EXPECT_EQ(anchor.means[i].first, means[i].first);
    EXPECT_TRUE(testing::bitwise_equal(anchor.means[i].second, means[i].second)) << means[i].first;
  }
  EXPECT_EQ(anchor.metadata.at("images"), "3");
  EXPECT_EQ(anchor.metadata.at("tokens_per_image"), "5");
  EXPECT_EQ(anchor.metadata.at("patches_per_image"), "4");
  EXPECT_EQ(anchor.metadata.at("data"), "idx:x?limit=3");
  EXPECT_EQ(anchor.metadata.at("model_hash"), backbone_hash(model));
  EXPECT_TRUE(testing::bitwise_equal(anchor.at("blocks.0.attn.proj.weight"), means[2].second));
}

TEST_F(AnchorFixture, RefusesAnotherModelNamingBothHashes) {
  save_anchor(path.str(), stats, backbone_hash(model), "d");
  const std::string saved_hash = backbone_hash(model);
  model.parameter("blocks.0.norm1.weight").mutable_value().data<float>()[0] += 1;
  expect_error({saved_hash, backbone_hash(model)});
}

TEST_F(AnchorFixture, RefusesMissingLayersWrongDtypesAndNegativeMeans) {
  std::map<std::string, std::string> metadata = {{"format", kAnchorFormat}, {"format_version", "1"},
                                                 {"model_hash", backbone_hash(model)}, {"data", "d"},
                                                 {"images", "3"}, {"tokens_per_image", "5"},
                                                 {"patches_per_image", "4"}};
  auto means = stats.means();
  auto missing = means;
  missing.pop_back();
  nn::write_safetensors(path.str(), missing, metadata);
  expect_error({"no entry for blocks.1.mlp.fc2.weight"});

  auto as_f32 = means;
  as_f32[1].second = as_f32[1].second.to(DType::F32);
  nn::write_safetensors(path.str(), as_f32, metadata);
  expect_error({"blocks.0.attn.qkv.weight", "expected f64[8]"});

  auto negative = means;
  negative[3].second = negative[3].second.clone();
  negative[3].second.data<double>()[2] = -1;
  nn::write_safetensors(path.str(), negative, metadata);
  expect_error({"blocks.0.mlp.fc1.weight[2]"});

  auto extra = means;
  extra.emplace_back("norm.weight", Tensor::zeros({8}, DType::F64, Device::cpu()));
  nn::write_safetensors(path.str(), extra, metadata);
  expect_error({"norm.weight"});

  metadata.erase("model_hash");
  nn::write_safetensors(path.str(), means, metadata);
  expect_error({"\"model_hash\" is missing"});
}

// 10 noise images of 8 x 8 x 3 (the loader's batches of 3 end with one of 1).
class NoiseImages : public data::Dataset {
 public:
  int64_t size() const override { return 10; }
  int num_classes() const override { return 1; }
  int64_t label(int64_t) const override { return 0; }
  data::Image load(int64_t i) const override {
    data::Image image{8, 8, 3, std::vector<uint8_t>(192)};
    for (int p = 0; p < 192; ++p) image.pixels[size_t(p)] = uint8_t(uniform01(3, uint64_t(i), uint64_t(p)) * 255);
    return image;
  }
  std::string describe(int64_t i) const override { return "noise image " + std::to_string(i); }
};

// The means of one epoch of NoiseImages through measure_activations on `device`.
std::vector<std::pair<std::string, Tensor>> measured_on(Device device) {
  nn::VisionTransformer model(testing::small_vit_config(3, 8, 2), Device::cpu());
  model.init_weights(9);
  model.to(device);
  NoiseImages images;
  data::EvalTransformOptions transform;
  transform.size = 8;
  transform.channels = 3;
  data::LoaderOptions options;
  options.batch_size = 3;
  data::Loader loader(images, data::eval_transform(transform), options);
  ActivationStats stats(model);
  std::vector<int64_t> progress;
  measure_activations(stats, loader, [&](int64_t done) { progress.push_back(done); });
  EXPECT_EQ(progress, (std::vector<int64_t>{3, 6, 9, 10}));
  return stats.means();
}

// Off the cpu, measure_activations fetches each next batch ahead of use: the emulated
// device runs that sequence and must give the cpu's bits.
TEST(MeasureActivations, TheEmulatedDeviceFetchingAheadGivesTheCpusBits) {
  const auto on_cpu = measured_on(Device::cpu()), on_emulated = measured_on(Device::emulated());
  ASSERT_EQ(on_emulated.size(), on_cpu.size());
  for (size_t i = 0; i < on_cpu.size(); ++i) {
    EXPECT_EQ(on_emulated[i].first, on_cpu[i].first);
    EXPECT_TRUE(on_emulated[i].second.device().is_cpu());
    EXPECT_TRUE(testing::bitwise_equal(on_emulated[i].second, on_cpu[i].second)) << on_cpu[i].first;
  }
}

}  // namespace
}  // namespace vitune::peft
