// Tests of the CPU softmax over the last dimension and its backward: against a plain
// double-precision reference written here, a float64 finite-difference check,
// bit-identical results for any thread count, equal and huge logits, and bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "engine/error.h"
#include "engine/ops.h"
#include "test_util.h"

namespace {

using vitune::DType;
using vitune::Error;
using vitune::Shape;
using vitune::Tensor;
using vitune::testing::bitwise_equal;
using vitune::testing::dot;
using vitune::testing::random_normal;
using vitune::testing::tensors_close;
using vitune::testing::ThreadCount;
using vitune::testing::values;
namespace ops = vitune::ops;

// The seed of this suite's random tensors.
constexpr uint64_t kSeed = 5;

// softmax of each row, in double, shifting by the row maximum.
Tensor reference_forward(const Tensor& x_t) {
  const int64_t cols = x_t.dim(-1), rows = x_t.numel() / cols;
  std::vector<double> x = values(x_t), y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = x.data() + r * cols;
    double max = xr[0];
    for (int64_t c = 1; c < cols; ++c) max = std::max(max, xr[c]);
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(xr[c] - max);
    for (int64_t c = 0; c < cols; ++c) y[size_t(r * cols + c)] = std::exp(xr[c] - max) / sum;
  }
  return Tensor::from_vector(x_t.shape(), y, vitune::Device::cpu());
}

// dx_j = sum_i dy_i * d y_i / d x_j with the full Jacobian y_i (delta_ij - y_j).
Tensor reference_backward(const Tensor& dy_t, const Tensor& y_t) {
  const int64_t cols = y_t.dim(-1), rows = y_t.numel() / cols;
  std::vector<double> dy = values(dy_t), y = values(y_t), dx(y.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cols; ++j) {
      double sum = 0;
      for (int64_t i = 0; i < cols; ++i) {
        double yi = y[size_t(r * cols + i)], yj = y[size_t(r * cols + j)];
        sum += dy[size_t(r * cols + i)] * yi * ((i == j ? 1.0 : 0.0) - yj);
      }
      dx[size_t(r * cols + j)] = sum;
    }
  }
  return Tensor::from_vector(y_t.shape(), dx, vitune::Device::cpu());
}

void check_against_reference(Shape shape, DType dtype, vitune::testing::Tolerance tol) {
  Tensor x = random_normal(shape, dtype, kSeed, 1, 0, 3), dy = random_normal(shape, dtype, kSeed, 2);
  Tensor y = ops::softmax_forward(x);
  Tensor dx = ops::softmax_backward(dy, y);
  EXPECT_EQ(y.dtype(), dtype);
  EXPECT_EQ(dx.shape(), shape);
  EXPECT_TRUE(tensors_close(y, reference_forward(x), tol, "y"));
  EXPECT_TRUE(tensors_close(dx, reference_backward(dy, y), tol, "dx"));
}

TEST(SoftmaxTest, MatchesReferenceF32) {
  check_against_reference({13, 37}, DType::F32, vitune::testing::kF32Forward);
}

TEST(SoftmaxTest, MatchesReferenceF64) {
  check_against_reference({13, 37}, DType::F64, vitune::testing::kF64Exact);
}

TEST(SoftmaxTest, MatchesReferenceForFourDimensionalInput) {
  check_against_reference({2, 3, 4, 9}, DType::F64, vitune::testing::kF64Exact);
}

TEST(SoftmaxTest, BackwardMatchesFiniteDifferencesF64) {
  Tensor x = random_normal({5, 7}, DType::F64, kSeed, 11, 0, 2);
  Tensor dy = random_normal({5, 7}, DType::F64, kSeed, 12);
  Tensor v = random_normal({5, 7}, DType::F64, kSeed, 13);
  // L(x) = sum(dy * softmax(x)); its directional derivative along v by central differences.
  auto loss_along = [&](double t) {
    std::vector<double> xs = values(x), vs = values(v);
    for (size_t i = 0; i < xs.size(); ++i) xs[i] += t * vs[i];
    return dot(dy, ops::softmax_forward(Tensor::from_vector(x.shape(), xs, vitune::Device::cpu())));
  };
  const double h = 1e-6;
  const double numeric = (loss_along(h) - loss_along(-h)) / (2 * h);
  const double analytic = dot(ops::softmax_backward(dy, ops::softmax_forward(x)), v);
  EXPECT_NEAR(numeric, analytic, 1e-6 * std::fabs(analytic));
}

TEST(SoftmaxTest, ResultsDoNotDependOnThreadCount) {
  Tensor x = random_normal({517, 61}, DType::F32, kSeed, 21, 0, 4);
  Tensor dy = random_normal({517, 61}, DType::F32, kSeed, 22);
  auto run = [&](int threads) {
    ThreadCount scope(threads);
    Tensor y = ops::softmax_forward(x);
    return std::make_pair(y, ops::softmax_backward(dy, y));
  };
  auto one = run(1);
  for (int threads : {2, 3}) {
    auto many = run(threads);
    EXPECT_TRUE(bitwise_equal(one.first, many.first)) << threads;
    EXPECT_TRUE(bitwise_equal(one.second, many.second)) << threads;
  }
}

TEST(SoftmaxTest, EqualLogitsGiveUniformProbabilities) {
  Tensor y = ops::softmax_forward(Tensor::full({2, 8}, 123.5, DType::F32, vitune::Device::cpu()));
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_FLOAT_EQ(float(y.item(i)), 0.125f) << i;
}

TEST(SoftmaxTest, HugeLogitsDoNotOverflow) {
  // Large positive and large negative rows: exp without the shift over- or underflows.
  Tensor x = Tensor::from_vector<float>({3, 3}, {1e4f, 1e4f - 1, -1e4f, -5e3f, 3e4f, 3e4f, -2e4f, -2e4f - 1, -3e4f}, vitune::Device::cpu());
  Tensor y = ops::softmax_forward(x);
  const double e = std::exp(-1.0);
  EXPECT_TRUE(tensors_close(
      y,
      Tensor::from_vector<double>({3, 3}, {1 / (1 + e), e / (1 + e), 0, 0, 0.5, 0.5, 1 / (1 + e), e / (1 + e), 0}, vitune::Device::cpu()),
      vitune::testing::kF32Forward, "y"));
}

TEST(SoftmaxTest, NanSpreadsOverItsRowOnly) {
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, NAN, 2, 1, 2, 3}, vitune::Device::cpu());
  std::vector<double> y = values(ops::softmax_forward(x));
  for (int c = 0; c < 3; ++c) EXPECT_TRUE(std::isnan(y[size_t(c)])) << c;
  for (int c = 3; c < 6; ++c) EXPECT_TRUE(std::isfinite(y[size_t(c)])) << c;
}

TEST(SoftmaxTest, BadArgumentsThrow) {
  EXPECT_THROW(ops::softmax_forward(Tensor::zeros({3, 4}, DType::I64, vitune::Device::cpu())), Error);
  EXPECT_THROW(ops::softmax_forward(Tensor::full({}, 1.0, DType::F32, vitune::Device::cpu())), Error);
  EXPECT_THROW(ops::softmax_forward(Tensor::zeros({3, 0}, DType::F32, vitune::Device::cpu())), Error);
  EXPECT_THROW(ops::softmax_forward(Tensor()), Error);
  Tensor y = ops::softmax_forward(random_normal({3, 4}, DType::F32, kSeed, 31));
  EXPECT_THROW(ops::softmax_backward(random_normal({3, 5}, DType::F32, kSeed, 32), y), Error);
  EXPECT_THROW(ops::softmax_backward(random_normal({3, 4}, DType::F64, kSeed, 33), y), Error);
  try {
    ops::softmax_backward(random_normal({4, 3}, DType::F32, kSeed, 32), y);
    ADD_FAILURE() << "mismatched shapes were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("softmax_backward"), std::string::npos) << e.what();
  }
}

}  // namespace
