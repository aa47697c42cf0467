// Tests of the CPU exact (erf) GELU and its backward: against a plain double-precision
// reference written here and known values, a float64 finite-difference check,
// bit-identical results for any thread count, and bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/error.h"
#include "engine/ops.h"
#include "test_util.h"

namespace {

using vitune::DType;
using vitune::Error;
using vitune::Tensor;
using vitune::testing::bitwise_equal;
using vitune::testing::random_normal;
using vitune::testing::tensors_close;
using vitune::testing::ThreadCount;
using vitune::testing::values;
namespace ops = vitune::ops;

// The seed of this suite's random tensors.
constexpr uint64_t kSeed = 3;

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }
double normal_pdf(double x) { return std::exp(-x * x / 2) / std::sqrt(2 * M_PI); }

void check_against_reference(DType dtype, vitune::testing::Tolerance tol) {
  Tensor x = random_normal({6, 41}, dtype, kSeed, 1, 0, 3), dy = random_normal({6, 41}, dtype, kSeed, 2);
  Tensor y = ops::gelu_forward(x), dx = ops::gelu_backward(dy, x);
  std::vector<double> xv = values(x), dyv = values(dy), y_ref(xv.size()), dx_ref(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) {
    y_ref[i] = xv[i] * normal_cdf(xv[i]);
    dx_ref[i] = dyv[i] * (normal_cdf(xv[i]) + xv[i] * normal_pdf(xv[i]));
  }
  EXPECT_EQ(y.dtype(), dtype);
  EXPECT_EQ(dx.shape(), x.shape());
  EXPECT_TRUE(tensors_close(y, Tensor::from_vector(x.shape(), y_ref, vitune::Device::cpu()), tol, "y"));
  EXPECT_TRUE(tensors_close(dx, Tensor::from_vector(x.shape(), dx_ref, vitune::Device::cpu()), tol, "dx"));
}

TEST(GeluTest, MatchesReferenceF32) {
  check_against_reference(DType::F32, vitune::testing::kF32Forward);
}

TEST(GeluTest, MatchesReferenceF64) {
  check_against_reference(DType::F64, vitune::testing::kF64Exact);
}

// Far in the negative tail GELU is x times a tiny Phi(x), and its gradient Phi + x phi a
// difference of two tiny numbers: float results keep their relative accuracy there (an
// erf-based 1 + erf(x / sqrt 2) would cancel to 0 or to noise). Within 1e-5 of the
// exact values relative to them for x in [-12, -2], where they fall from 5e-2 to 1e-31
// (measured: 4.1e-6 at most, from the rounding of x^2 / 2).
TEST(GeluTest, NegativeTailKeepsRelativeAccuracyF32) {
  std::vector<double> xs;
  for (double x = -12.0; x <= -2.0; x += 0.0137) xs.push_back(double(float(x)));
  const Tensor x = Tensor::from_vector<double>({int64_t(xs.size())}, xs, vitune::Device::cpu()).to(DType::F32);
  const Tensor ones = Tensor::full({int64_t(xs.size())}, 1.0, DType::F32, vitune::Device::cpu());
  const std::vector<double> y = values(ops::gelu_forward(x)), dx = values(ops::gelu_backward(ones, x));
  for (size_t i = 0; i < xs.size(); ++i) {
    const double y_ref = xs[i] * normal_cdf(xs[i]);
    const double dx_ref = normal_cdf(xs[i]) + xs[i] * normal_pdf(xs[i]);
    EXPECT_NEAR(y[i], y_ref, 1e-5 * std::fabs(y_ref)) << "x = " << xs[i];
    EXPECT_NEAR(dx[i], dx_ref, 1e-5 * std::fabs(dx_ref)) << "x = " << xs[i];
  }
}

TEST(GeluTest, KnownValues) {
  Tensor x = Tensor::from_vector<double>({5}, {0, 1, -1, 8, -8}, vitune::Device::cpu());
  Tensor y = ops::gelu_forward(x);
  // x * Phi(x) with Phi(1) = 0.8413447460685429; far in the tails, x and 0.
  EXPECT_EQ(y.item(0), 0.0);
  EXPECT_NEAR(y.item(1), 0.8413447460685429, 1e-15);
  EXPECT_NEAR(y.item(2), -0.15865525393145707, 1e-15);
  EXPECT_NEAR(y.item(3), 8.0, 1e-13);
  EXPECT_NEAR(y.item(4), 0.0, 1e-13);
  Tensor dx = ops::gelu_backward(Tensor::full({5}, 1.0, DType::F64, vitune::Device::cpu()), x);
  EXPECT_EQ(dx.item(0), 0.5);  // Phi(0) + 0
  EXPECT_NEAR(dx.item(1), 0.8413447460685429 + 0.24197072451914337, 1e-15);
}

TEST(GeluTest, BackwardMatchesFiniteDifferencesF64) {
  Tensor x = random_normal({3, 11}, DType::F64, kSeed, 11, 0, 2);
  Tensor dy = random_normal({3, 11}, DType::F64, kSeed, 12);
  Tensor v = random_normal({3, 11}, DType::F64, kSeed, 13);
  std::vector<double> dyv = values(dy), vv = values(v);
  // L(x) = sum(dy * gelu(x)) along x + t v.
  auto loss_along = [&](double t) {
    std::vector<double> xs = values(x);
    for (size_t i = 0; i < xs.size(); ++i) xs[i] += t * vv[i];
    std::vector<double> y = values(ops::gelu_forward(Tensor::from_vector(x.shape(), xs, vitune::Device::cpu())));
    double sum = 0;
    for (size_t i = 0; i < y.size(); ++i) sum += dyv[i] * y[i];
    return sum;
  };
  const double h = 1e-6;
  const double numeric = (loss_along(h) - loss_along(-h)) / (2 * h);
  std::vector<double> dx = values(ops::gelu_backward(dy, x));
  double analytic = 0;
  for (size_t i = 0; i < dx.size(); ++i) analytic += dx[i] * vv[i];
  EXPECT_NEAR(numeric, analytic, 1e-6 * std::fabs(analytic));
}

TEST(GeluTest, ResultsDoNotDependOnThreadCount) {
  Tensor x = random_normal({100003}, DType::F32, kSeed, 21, 0, 3);
  Tensor dy = random_normal({100003}, DType::F32, kSeed, 22);
  auto run = [&](int threads) {
    ThreadCount scope(threads);
    return std::make_pair(ops::gelu_forward(x), ops::gelu_backward(dy, x));
  };
  auto one = run(1);
  for (int threads : {2, 3}) {
    auto many = run(threads);
    EXPECT_TRUE(bitwise_equal(one.first, many.first)) << threads;
    EXPECT_TRUE(bitwise_equal(one.second, many.second)) << threads;
  }
}

TEST(GeluTest, BadArgumentsThrow) {
  EXPECT_THROW(ops::gelu_forward(Tensor::zeros({4}, DType::I32, vitune::Device::cpu())), Error);
  EXPECT_THROW(ops::gelu_forward(Tensor()), Error);
  Tensor x = random_normal({4, 3}, DType::F32, kSeed, 31);
  EXPECT_THROW(ops::gelu_backward(random_normal({3, 4}, DType::F32, kSeed, 32), x), Error);
  EXPECT_THROW(ops::gelu_backward(random_normal({4, 3}, DType::F64, kSeed, 33), x), Error);
  try {
    ops::gelu_backward(random_normal({12}, DType::F32, kSeed, 32), x);
    ADD_FAILURE() << "mismatched shapes were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gelu_backward"), std::string::npos) << e.what();
  }
}

}  // namespace
