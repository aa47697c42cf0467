// Tests of patchify and unpatchify: patchify followed by a conv weight viewed as a
// matrix equals a stride-p convolution written plainly here; the layout of each patch;
// unpatchify is the adjoint (<patchify(a), b> == <a, unpatchify(b)>) and the inverse;
// clear errors for shapes that do not divide into patches.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/error.h"
#include "engine/ops.h"
#include "test_util.h"

namespace {

using vitune::DType;
using vitune::Error;
using vitune::Shape;
using vitune::Tensor;
using vitune::testing::dot;
using vitune::testing::uniform_tensor;
namespace ops = vitune::ops;

TEST(PatchTest, PatchifyThenMatmulEqualsStridedConvolution) {
  const int64_t B = 2, C = 3, H = 8, W = 12, p = 4, D = 5;
  const int64_t gh = H / p, gw = W / p, E = C * p * p;
  Tensor images = uniform_tensor<double>({B, C, H, W}, 1, -1, 1);
  Tensor weight = uniform_tensor<double>({D, C, p, p}, 2, -1, 1);
  Tensor patches = ops::patchify(images, int(p));
  ASSERT_EQ(patches.shape(), (Shape{B, gh * gw, E}));
  const double* img = images.data<double>();
  const double* w = weight.data<double>();
  const double* pt = patches.data<double>();
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t d = 0; d < D; ++d) {
      for (int64_t ph = 0; ph < gh; ++ph) {
        for (int64_t pw = 0; pw < gw; ++pw) {
          double conv = 0;
          for (int64_t c = 0; c < C; ++c) {
            for (int64_t i = 0; i < p; ++i) {
              for (int64_t j = 0; j < p; ++j) {
                conv += w[((d * C + c) * p + i) * p + j] *
                        img[((b * C + c) * H + ph * p + i) * W + pw * p + j];
              }
            }
          }
          double linear = 0;
          const int64_t token = ph * gw + pw;
          for (int64_t e = 0; e < E; ++e) linear += pt[(b * gh * gw + token) * E + e] * w[d * E + e];
          ASSERT_NEAR(linear, conv, 1e-12) << "b " << b << " d " << d << " patch " << ph << "," << pw;
        }
      }
    }
  }
}

TEST(PatchTest, PatchLayoutIsChannelRowColumn) {
  const int64_t B = 1, C = 2, H = 4, W = 6, p = 2;
  std::vector<float> v(size_t(B * C * H * W));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i);
  Tensor patches = ops::patchify(Tensor::from_vector<float>({B, C, H, W}, v, vitune::Device::cpu()), int(p));
  // Patch 4 is grid row 1, column 1: image rows 2-3, columns 2-3.
  const float* patch = patches.data<float>() + 4 * C * p * p;
  const std::vector<float> expected{14, 15, 20, 21, 38, 39, 44, 45};
  EXPECT_EQ(std::vector<float>(patch, patch + 8), expected);
}

template <typename T>
void check_adjoint() {
  const Shape shape{3, 3, 16, 16};
  Tensor a = uniform_tensor<T, double>(shape, 3, -1, 1);
  Tensor b = uniform_tensor<T, double>({3, 16, 3 * 16}, 4, -1, 1);
  const double lhs = dot(ops::patchify(a, 4), b);
  const double rhs = dot(a, ops::unpatchify(b, shape, 4));
  EXPECT_NEAR(lhs, rhs, 1e-10 * std::fabs(lhs) + 1e-10);
  EXPECT_TRUE(vitune::testing::bitwise_equal(ops::unpatchify(ops::patchify(a, 4), shape, 4), a));
}

TEST(PatchTest, UnpatchifyIsTheAdjointAndInverseF32) { check_adjoint<float>(); }
TEST(PatchTest, UnpatchifyIsTheAdjointAndInverseF64) { check_adjoint<double>(); }

TEST(PatchTest, PatchOfOneAndWholeImage) {
  Tensor a = uniform_tensor<float, double>({2, 3, 4, 4}, 5, -1, 1);
  Tensor pixels = ops::patchify(a, 1);
  EXPECT_EQ(pixels.shape(), (Shape{2, 16, 3}));
  EXPECT_EQ(pixels.data<float>()[5 * 3 + 2], a.data<float>()[(0 * 3 + 2) * 16 + 5]);
  Tensor whole = ops::patchify(a, 4);
  EXPECT_EQ(whole.shape(), (Shape{2, 1, 48}));
  EXPECT_EQ(whole.to_vector<float>(), a.to_vector<float>());
}

TEST(PatchTest, BadShapesThrow) {
  EXPECT_THROW(ops::patchify(Tensor::zeros({1, 3, 10, 12}, DType::F32, vitune::Device::cpu()), 4), Error);
  EXPECT_THROW(ops::patchify(Tensor::zeros({1, 3, 12, 10}, DType::F32, vitune::Device::cpu()), 4), Error);
  EXPECT_THROW(ops::patchify(Tensor::zeros({3, 8, 8}, DType::F32, vitune::Device::cpu()), 4), Error);
  EXPECT_THROW(ops::patchify(Tensor::zeros({1, 3, 8, 8}, DType::F32, vitune::Device::cpu()), 0), Error);
  EXPECT_THROW(ops::patchify(Tensor::zeros({1, 3, 8, 8}, DType::U8, vitune::Device::cpu()), 4), Error);
  EXPECT_THROW(ops::unpatchify(Tensor::zeros({1, 4, 47}, DType::F32, vitune::Device::cpu()), {1, 3, 8, 8}, 4), Error);
  EXPECT_THROW(ops::unpatchify(Tensor::zeros({1, 4, 48}, DType::F32, vitune::Device::cpu()), {1, 3, 8, 9}, 4), Error);
  try {
    ops::patchify(Tensor::zeros({1, 3, 10, 12}, DType::F32, vitune::Device::cpu()), 4);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("divisible"), std::string::npos) << e.what();
  }
}

}  // namespace
