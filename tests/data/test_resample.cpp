// Resizing against values computed by hand and against PyTorch's F.interpolate
// (tests/golden/data_transforms.safetensors, made by tools/make_data_golden.py).
#include <gtest/gtest.h>

#include <algorithm>

#include "data/resample.h"
#include "golden_reader.h"
#include "test_util.h"

namespace vitune::data {
namespace {

using vitune::testing::data_path;
using vitune::testing::tensors_close;

// float planes -> f32 tensor [C, H, W]
Tensor as_tensor(const FloatImage& image) {
  return Tensor::from_vector<float>({image.channels, image.height, image.width}, std::vector<float>(image.values.begin(), image.values.end()), Device::cpu());
}

FloatImage from_values(int channels, int height, int width, const std::vector<float>& values) {
  FloatImage image(channels, height, width);
  std::copy(values.begin(), values.end(), image.values.data());
  return image;
}

// Agreement with PyTorch up to float rounding of the weights and sums.
constexpr vitune::testing::Tolerance kResizeTolerance{2e-6, 1e-6};

TEST(Resample, Bilinear2x2To4x4MatchesHandValues) {
  // [[0, 1], [0.4, 0.8]]: 1-D weights for [p, q] are p, .75p+.25q, .25p+.75q, q.
  const FloatImage image = from_values(1, 2, 2, {0.0f, 1.0f, 0.4f, 0.8f});
  const FloatImage out = resample(image, {0, 0, 2, 2}, 4, 4, Interpolation::Bilinear);
  const Tensor expected = Tensor::from_vector<float>({1, 4, 4}, {0.0f, 0.25f, 0.75f, 1.0f,       //
                                                                 0.1f, 0.3125f, 0.7375f, 0.95f,  //
                                                                 0.3f, 0.4375f, 0.7125f, 0.85f,  //
                                                                 0.4f, 0.5f, 0.7f, 0.8f}, Device::cpu());
  EXPECT_TRUE(tensors_close(as_tensor(out), expected, kResizeTolerance, "bilinear 2x2 -> 4x4"));
}

TEST(Resample, BicubicOneRowMatchesHandValues) {
  // 1x4 -> 1x2: scale 2, sources at 0.5 and 2.5, t = 0.5; with a = -0.75 the four
  // weights at t = 0.5 are -0.09375, 0.59375, 0.59375, -0.09375. Source x = 0.5 reads
  // pixels (clamped) 0, 0, 1, 2 and x = 2.5 reads 1, 2, 3, 3.
  const FloatImage image = from_values(1, 1, 4, {0.1f, 0.2f, 0.6f, 1.0f});
  const FloatImage out = resample(image, {0, 0, 1, 4}, 1, 2, Interpolation::Bicubic);
  const double w0 = -0.09375, w1 = 0.59375;
  const Tensor expected =
      Tensor::from_vector<float>({1, 1, 2}, {float(w0 * 0.1 + w1 * 0.1 + w1 * 0.2 + w0 * 0.6),
                                             float(w0 * 0.2 + w1 * 0.6 + w1 * 1.0 + w0 * 1.0)}, Device::cpu());
  EXPECT_TRUE(tensors_close(as_tensor(out), expected, kResizeTolerance, "bicubic 1x4 -> 1x2"));
}

TEST(Resample, SameSizeIsACopy) {
  const FloatImage image = from_values(1, 2, 3, {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f});
  for (Interpolation mode : {Interpolation::Bilinear, Interpolation::Bicubic}) {
    EXPECT_TRUE(vitune::testing::bitwise_equal(as_tensor(resample(image, {0, 0, 2, 3}, 2, 3, mode)),
                                               as_tensor(image)));
  }
}

TEST(Resample, MatchesPyTorchInterpolate) {
  const auto golden = testing::read_golden(data_path("data_transforms.safetensors"));
  int cases = 0;
  for (int k = 0; golden.count("case." + std::to_string(k) + ".params"); ++k, ++cases) {
    const std::string name = "case." + std::to_string(k);
    const std::vector<int64_t> p = golden.at(name + ".params").to_vector<int64_t>();
    const Tensor& input = golden.at("image." + std::to_string(p[0]));
    FloatImage image(int(input.dim(0)), int(input.dim(1)), int(input.dim(2)));
    for (size_t i = 0; i < image.values.size(); ++i) {
      image.values[i] = input.data<float>()[i] / 255.0f;
    }
    const Region region{int(p[1]), int(p[2]), int(p[3]), int(p[4])};
    const Interpolation mode = p[7] == 0 ? Interpolation::Bilinear : Interpolation::Bicubic;
    const FloatImage out = resample(image, region, int(p[5]), int(p[6]), mode);
    EXPECT_TRUE(tensors_close(as_tensor(out), golden.at(name + ".output"), kResizeTolerance,
                              name + " (" + interpolation_name(mode) + ")"));
  }
  EXPECT_EQ(cases, 22);
}

TEST(Resample, RegionOutsideTheImageIsAnError) {
  const FloatImage image(3, 4, 4);
  EXPECT_THROW(resample(image, {1, 1, 4, 2}, 2, 2, Interpolation::Bilinear), Error);
  EXPECT_THROW(resample(image, {0, 0, 4, 4}, 0, 2, Interpolation::Bilinear), Error);
}

}  // namespace
}  // namespace vitune::data
