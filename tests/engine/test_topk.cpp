// Tests of topk_rows against a full stable sort written here: descending values, ties to
// the lower column, NaN never selected (short rows padded with -1 / NaN), infinities
// selectable, large rows with small k, f32 and f64, and errors on bad k or shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "engine/error.h"
#include "engine/ops.h"
#include "test_util.h"

namespace {

using vitune::DType;
using vitune::Error;
using vitune::Tensor;
namespace ops = vitune::ops;

// Rows drawn from a few values so that ties are common, with some NaN and infinities.
template <typename T>
Tensor tie_heavy_tensor(int64_t rows, int64_t cols, unsigned seed, double special_rate) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> level(-3, 3);
  std::uniform_real_distribution<double> chance(0, 1);
  std::vector<T> v(size_t(rows * cols));
  for (T& x : v) {
    double u = chance(gen);
    if (u < special_rate) {
      x = std::numeric_limits<T>::quiet_NaN();
    } else if (u < 1.5 * special_rate) {
      x = std::numeric_limits<T>::infinity();
    } else if (u < 2 * special_rate) {
      x = -std::numeric_limits<T>::infinity();
    } else {
      x = T(level(gen)) * T(0.5);
    }
  }
  return Tensor::from_vector({rows, cols}, v, vitune::Device::cpu());
}

// The reference: stable-sort the non-NaN columns by descending value, keep the first k.
template <typename T>
void check_against_sort(const Tensor& x, int64_t k) {
  Tensor values, indices;
  ops::topk_rows(x, k, values, indices);
  const int64_t rows = x.dim(0), cols = x.dim(1);
  ASSERT_EQ(values.shape(), (vitune::Shape{rows, k}));
  ASSERT_EQ(indices.shape(), (vitune::Shape{rows, k}));
  ASSERT_EQ(values.dtype(), x.dtype());
  ASSERT_EQ(indices.dtype(), DType::I64);
  for (int64_t r = 0; r < rows; ++r) {
    const T* line = x.data<T>() + r * cols;
    std::vector<int64_t> order;
    for (int64_t c = 0; c < cols; ++c) {
      if (!std::isnan(line[c])) order.push_back(c);
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return line[a] > line[b]; });
    for (int64_t i = 0; i < k; ++i) {
      const int64_t got_index = indices.data<int64_t>()[r * k + i];
      const T got_value = values.data<T>()[r * k + i];
      if (i < int64_t(order.size())) {
        ASSERT_EQ(got_index, order[size_t(i)]) << "row " << r << " slot " << i;
        ASSERT_EQ(got_value, line[order[size_t(i)]]) << "row " << r << " slot " << i;
      } else {
        ASSERT_EQ(got_index, -1) << "row " << r << " slot " << i;
        ASSERT_TRUE(std::isnan(got_value)) << "row " << r << " slot " << i;
      }
    }
  }
}

TEST(TopkTest, MatchesStableSortWithTiesNanAndInfinityF32) {
  Tensor x = tie_heavy_tensor<float>(37, 29, 1, 0.1);
  for (int64_t k : {0, 1, 5, 28, 29}) check_against_sort<float>(x, k);
}

TEST(TopkTest, MatchesStableSortWithTiesNanAndInfinityF64) {
  Tensor x = tie_heavy_tensor<double>(23, 41, 2, 0.1);
  for (int64_t k : {0, 3, 40, 41}) check_against_sort<double>(x, k);
}

TEST(TopkTest, LargeRowsWithSmallK) {
  Tensor x = tie_heavy_tensor<float>(64, 5000, 3, 0.01);
  check_against_sort<float>(x, 7);
  std::mt19937 gen(4);
  std::normal_distribution<float> dist;
  std::vector<float> v(64 * 3072);
  for (float& e : v) e = dist(gen);
  check_against_sort<float>(Tensor::from_vector<float>({64, 3072}, v, vitune::Device::cpu()), 16);
}

TEST(TopkTest, RowsWithFewNumbersArePaddedWithMinusOneAndNan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  Tensor x = Tensor::from_vector<float>({3, 4}, {nan, 2, nan, -inf,   //
                                                 nan, nan, nan, nan,   //
                                                 inf, -0.0f, 0.0f, inf}, vitune::Device::cpu());
  Tensor values, indices;
  ops::topk_rows(x, 3, values, indices);
  EXPECT_EQ(indices.to_vector<int64_t>(), (std::vector<int64_t>{1, 3, -1, -1, -1, -1, 0, 3, 1}));
  std::vector<float> v = values.to_vector<float>();
  EXPECT_EQ(v[0], 2.0f);
  EXPECT_EQ(v[1], -inf);
  EXPECT_TRUE(std::isnan(v[2]));
  for (int i = 3; i < 6; ++i) EXPECT_TRUE(std::isnan(v[size_t(i)]));
  EXPECT_EQ(v[6], inf);
  EXPECT_EQ(v[7], inf);
  EXPECT_EQ(v[8], 0.0f);
}

TEST(TopkTest, EmptyRowsGiveEmptyOutputs) {
  Tensor values, indices;
  ops::topk_rows(Tensor::zeros({0, 5}, DType::F32, vitune::Device::cpu()), 2, values, indices);
  EXPECT_EQ(values.shape(), (vitune::Shape{0, 2}));
  EXPECT_EQ(indices.shape(), (vitune::Shape{0, 2}));
}

TEST(TopkTest, BadArgumentsThrow) {
  Tensor values, indices;
  Tensor x = Tensor::zeros({2, 3}, DType::F32, vitune::Device::cpu());
  EXPECT_THROW(ops::topk_rows(x, 4, values, indices), Error);
  EXPECT_THROW(ops::topk_rows(x, -1, values, indices), Error);
  EXPECT_THROW(ops::topk_rows(Tensor::zeros({6}, DType::F32, vitune::Device::cpu()), 1, values, indices), Error);
  EXPECT_THROW(ops::topk_rows(Tensor::zeros({2, 3}, DType::I32, vitune::Device::cpu()), 1, values, indices), Error);
}

}  // namespace
