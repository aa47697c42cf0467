// Transform steps against hand-computed values and torchvision's formulas written out
// plainly here; the counter-based random draws; the standard pipelines.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "data/transform_presets.h"
#include "data/transform_steps.h"
#include "data_test_files.h"
#include "engine/random.h"
#include "test_util.h"

namespace vitune::data {
namespace {

using testing::pattern_image;
using vitune::testing::tensors_close;

constexpr vitune::testing::Tolerance kTight{1e-6, 1e-6};

std::vector<float> values_of(const FloatImage& image) {
  return std::vector<float>(image.values.begin(), image.values.end());
}

FloatImage run_step(const TransformStep& step, const Image& image, const RandomKey& key = {}) {
  FloatImage values = to_float_image(image);
  step.apply(values, StepRandom(key, 0));
  return values;
}

TEST(StepRandom, DrawsAreTheDocumentedCounters) {
  const RandomKey key{42, 3, 1000};
  const StepRandom random(key, 2);
  for (int draw : {0, 1, 255}) {
    const uint64_t index = (uint64_t(1000) << 16) | (uint64_t(2) << 8) | uint64_t(draw);
    EXPECT_EQ(random.uniform(draw), uniform01(42, (uint64_t(1) << 63) | 3, index));
  }
  EXPECT_THROW(random.uniform(256), Error);
  for (int draw = 0; draw < 100; ++draw) {
    const int64_t value = random.below(7, draw);
    EXPECT_TRUE(value >= 0 && value < 7);
  }
}

TEST(ToFloat, DividesBy255IntoPlanes) {
  const Image image{1, 2, 3, {0, 51, 255, 10, 20, 30}};
  const FloatImage values = to_float_image(image);
  EXPECT_EQ(values_of(values),
            (std::vector<float>{0.0f, 10 / 255.0f, 51 / 255.0f, 20 / 255.0f, 1.0f, 30 / 255.0f}));
  EXPECT_THROW(to_float_image(Image{2, 2, 3, {1, 2, 3}}), Error);
  EXPECT_THROW(to_float_image(Image{1, 1, 2, {1, 2}}), Error);
}

TEST(ResizeShorterSide, KeepsAspectRatioTruncatingTheLongerSide) {
  EXPECT_EQ(shorter_side_size(480, 640, 256), (std::pair<int, int>{256, 341}));
  EXPECT_EQ(shorter_side_size(640, 480, 256), (std::pair<int, int>{341, 256}));
  EXPECT_EQ(shorter_side_size(28, 28, 32), (std::pair<int, int>{32, 32}));
  const FloatImage out =
      run_step(ResizeShorterSide(3, Interpolation::Bilinear), pattern_image(4, 6, 3, 0));
  EXPECT_EQ(out.height, 3);
  EXPECT_EQ(out.width, 4);
}

TEST(CentreCrop, OffsetsRoundHalfToEven) {
  // (7 - 4) / 2 = 1.5 -> 2; (8 - 4) / 2 = 2; (9 - 4) / 2 = 2.5 -> 2.
  EXPECT_EQ(centre_crop_region(7, 8, 4, 4).top, 2);
  EXPECT_EQ(centre_crop_region(7, 8, 4, 4).left, 2);
  EXPECT_EQ(centre_crop_region(9, 9, 4, 4).top, 2);
  EXPECT_EQ(centre_crop_region(5, 9, 4, 4).top, 0);  // 0.5 -> 0
  EXPECT_THROW(centre_crop_region(3, 9, 4, 4), Error);

  const Image image = pattern_image(7, 9, 1, 5);
  const FloatImage out = run_step(CentreCrop(4, 4), image);
  ASSERT_EQ(out.height, 4);
  ASSERT_EQ(out.width, 4);
  for (int y = 0; y < 4; ++y) {
    for (int x = 0; x < 4; ++x) {
      EXPECT_EQ(out.values[size_t(y * 4 + x)], image.at(y + 2, x + 2, 0) / 255.0f);
    }
  }
}

// torchvision's RandomResizedCrop.get_params, with its random numbers taken from the
// documented draws.
Region torchvision_crop(int height, int width, const StepRandom& random) {
  const double area = double(height) * width;
  const double log_low = std::log(3.0 / 4.0), log_high = std::log(4.0 / 3.0);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * (0.08 + 0.92 * random.uniform(4 * attempt));
    const double aspect =
        std::exp(log_low + (log_high - log_low) * random.uniform(4 * attempt + 1));
    const int w = int(std::nearbyint(std::sqrt(target_area * aspect)));
    const int h = int(std::nearbyint(std::sqrt(target_area / aspect)));
    if (0 < w && w <= width && 0 < h && h <= height) {
      const int top = int(random.uniform(4 * attempt + 2) * (height - h + 1));
      const int left = int(random.uniform(4 * attempt + 3) * (width - w + 1));
      return {top, left, h, w};
    }
  }
  return {-1, -1, -1, -1};  // not reached for the sizes below
}

TEST(RandomResizedCrop, RegionFollowsTorchvision) {
  for (int64_t example = 0; example < 300; ++example) {
    const StepRandom random(RandomKey{7, 1, example}, 0);
    const Region region =
        random_resized_crop_region(20, 30, random, {0.08, 1.0}, {0.75, 4.0 / 3.0});
    const Region expected = torchvision_crop(20, 30, random);
    EXPECT_EQ(region.top, expected.top) << example;
    EXPECT_EQ(region.left, expected.left) << example;
    EXPECT_EQ(region.height, expected.height) << example;
    EXPECT_EQ(region.width, expected.width) << example;
  }
}

TEST(RandomResizedCrop, FallsBackToTheCentredCropWithinTheRatioRange) {
  const StepRandom random(RandomKey{1, 0, 0}, 0);
  // Scale above 1 never fits. 20x30 is wider than 4/3: width round(20 * 4/3) = 27.
  const Region wide = random_resized_crop_region(20, 30, random, {2.0, 3.0}, {0.75, 4.0 / 3.0});
  EXPECT_EQ(wide.top, 0);
  EXPECT_EQ(wide.left, 1);
  EXPECT_EQ(wide.height, 20);
  EXPECT_EQ(wide.width, 27);
  // 40x10 is taller than 3/4: height round(10 / 0.75) = 13, top (40 - 13) // 2 = 13.
  const Region tall = random_resized_crop_region(40, 10, random, {2.0, 3.0}, {0.75, 4.0 / 3.0});
  EXPECT_EQ(tall.top, 13);
  EXPECT_EQ(tall.left, 0);
  EXPECT_EQ(tall.height, 13);
  EXPECT_EQ(tall.width, 10);
  const Region square = random_resized_crop_region(10, 10, random, {2.0, 3.0}, {0.75, 4.0 / 3.0});
  EXPECT_EQ(square.height, 10);
  EXPECT_EQ(square.width, 10);
}

TEST(RandomResizedCrop, ResizesTheRegion) {
  const Image image = pattern_image(20, 30, 3, 4);
  const RandomKey key{9, 2, 17};
  const RandomResizedCrop step(8, Interpolation::Bicubic);
  const FloatImage out = run_step(step, image, key);
  const Region region =
      random_resized_crop_region(20, 30, StepRandom(key, 0), {0.08, 1.0}, {3.0 / 4.0, 4.0 / 3.0});
  const FloatImage expected = resample(to_float_image(image), region, 8, 8, Interpolation::Bicubic);
  EXPECT_EQ(values_of(out), values_of(expected));
}

TEST(RandomHorizontalFlip, MirrorsRowsWithProbabilityP) {
  const Image image{2, 3, 1, {1, 2, 3, 4, 5, 6}};
  EXPECT_EQ(
      values_of(run_step(RandomHorizontalFlip(1.0), image)),
      (std::vector<float>{3 / 255.0f, 2 / 255.0f, 1 / 255.0f, 6 / 255.0f, 5 / 255.0f, 4 / 255.0f}));
  EXPECT_EQ(values_of(run_step(RandomHorizontalFlip(0.0), image)),
            values_of(to_float_image(image)));
  int flipped = 0;
  const RandomHorizontalFlip half(0.5);
  for (int64_t example = 0; example < 400; ++example) {
    const RandomKey key{5, 0, example};
    const bool flips = run_step(half, image, key).values[0] == 3 / 255.0f;
    EXPECT_EQ(flips, StepRandom(key, 0).uniform(0) < 0.5f);
    flipped += flips;
  }
  EXPECT_GT(flipped, 160);
  EXPECT_LT(flipped, 240);
}

TEST(ToChannels, ReplicatesGreyAndWeighsRgb) {
  const Image grey{1, 2, 1, {51, 102}};
  const FloatImage rgb = run_step(ToChannels(3), grey);
  EXPECT_EQ(rgb.channels, 3);
  EXPECT_EQ(values_of(rgb), (std::vector<float>{0.2f, 0.4f, 0.2f, 0.4f, 0.2f, 0.4f}));
  const Image colour{1, 1, 3, {255, 51, 102}};
  const FloatImage back = run_step(ToChannels(1), colour);
  ASSERT_EQ(back.channels, 1);
  EXPECT_NEAR(back.values[0], 0.299 * 1.0 + 0.587 * 0.2 + 0.114 * 0.4, 1e-6);
  EXPECT_EQ(values_of(run_step(ToChannels(3), colour)), values_of(to_float_image(colour)));
}

TEST(Normalize, PresetsAndOneChannelImages) {
  const Normalization imagenet = normalization_preset("imagenet");
  const Normalize step(imagenet.mean, imagenet.std);
  const Image colour{1, 1, 3, {255, 0, 51}};
  const FloatImage out = run_step(step, colour);
  EXPECT_NEAR(out.values[0], (1.0 - 0.485) / 0.229, 1e-5);
  EXPECT_NEAR(out.values[1], (0.0 - 0.456) / 0.224, 1e-5);
  EXPECT_NEAR(out.values[2], (0.2 - 0.406) / 0.225, 1e-5);
  // One channel: the means of the preset, (0.485+0.456+0.406)/3 and (0.229+0.224+0.225)/3.
  const FloatImage grey = run_step(step, Image{1, 1, 1, {102}});
  EXPECT_NEAR(grey.values[0], (0.4 - 0.449) / 0.226, 1e-5);
  const Normalization half = normalization_preset("half");
  EXPECT_NEAR(run_step(Normalize(half.mean, half.std), colour).values[2], (0.2 - 0.5) / 0.5, 1e-6);
  EXPECT_THROW(normalization_preset("cifar"), Error);
  FloatImage three_channels(3, 1, 1);
  EXPECT_THROW(Normalize({0.5f, 0.5f}, {0.5f, 0.5f}).apply(three_channels, StepRandom({}, 0)),
               Error);
}

TEST(EvalTransform, ResizesCropsConvertsAndNormalises) {
  // size 4, crop_pct 0.8: shorter side to floor(4 / 0.8) = 5, so 6x8 -> 5x6, then the
  // centred 4x4 at (round(0.5), round(1)) = (0, 1), then grey -> RGB and "half".
  EvalTransformOptions options;
  options.size = 4;
  options.preprocessing.crop_pct = 0.8;
  const Transform transform = eval_transform(options);
  EXPECT_EQ(transform.describe(),
            "resize_shorter(5, bicubic) | centre_crop(4x4) | to_channels(3) | "
            "normalise(mean 0.5, std 0.5)");
  const Image image = pattern_image(6, 8, 1, 3);
  const Tensor out = transform.apply(image);
  ASSERT_EQ(out.shape(), (Shape{3, 4, 4}));
  const FloatImage resized =
      resample(to_float_image(image), {0, 0, 6, 8}, 5, 6, Interpolation::Bicubic);
  std::vector<float> expected;
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 4; ++y) {
      for (int x = 0; x < 4; ++x) {
        expected.push_back((resized.values[size_t(y * 6 + x + 1)] - 0.5f) / 0.5f);
      }
    }
  }
  EXPECT_TRUE(tensors_close(out, Tensor::from_vector<float>({3, 4, 4}, expected, Device::cpu()), kTight, "eval"));
}

TEST(TrainTransform, IsAPureFunctionOfSeedEpochAndExample) {
  TrainTransformOptions options;
  options.size = 8;
  const Transform transform = train_transform(options);
  EXPECT_EQ(transform.size(), 4u);
  const Image image = pattern_image(20, 16, 3, 1);
  const Tensor first = transform.apply(image, {1, 0, 5});
  EXPECT_EQ(first.shape(), (Shape{3, 8, 8}));
  EXPECT_TRUE(vitune::testing::bitwise_equal(first, transform.apply(image, {1, 0, 5})));
  EXPECT_FALSE(vitune::testing::bitwise_equal(first, transform.apply(image, {1, 1, 5})));
  EXPECT_FALSE(vitune::testing::bitwise_equal(first, transform.apply(image, {2, 0, 5})));
  EXPECT_FALSE(vitune::testing::bitwise_equal(first, transform.apply(image, {1, 0, 6})));
}

}  // namespace
}  // namespace vitune::data
