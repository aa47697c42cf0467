// Tests of the CPU reductions: column sums over rows against a plain double loop (to
// the rounding of a different summation order and one rounding to T), sum
// and sum of squares against index-order double sums, thread-count independence, the
// finiteness test, and errors on bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/error.h"
#include "engine/ops.h"
#include "test_util.h"

namespace {

using vitune::DType;
using vitune::Error;
using vitune::Tensor;
using vitune::testing::ThreadCount;
using vitune::testing::uniform_tensor;
namespace ops = vitune::ops;

template <typename T>
void check_sum_rows() {
  const int64_t rows = 1500, cols = 203;
  Tensor x = uniform_tensor<T>({3, rows / 3, cols}, 11, -1, 3);
  Tensor acc = uniform_tensor<T>({cols}, 12, -1, 3);
  Tensor before = acc.clone();
  ops::sum_rows_into(x, acc);
  for (int64_t c = 0; c < cols; ++c) {
    double s = 0, magnitude = 0;
    for (int64_t r = 0; r < rows; ++r) {
      s += double(x.data<T>()[r * cols + c]);
      magnitude += std::fabs(double(x.data<T>()[r * cols + c]));
    }
    // The kernel sums in double in another order (row chunks): either sum is within
    // rows * DBL_EPSILON * sum |x| of the exact one; then one rounding to T.
    const double expected = double(before.data<T>()[c]) + s;
    const double tolerance = double(rows) * std::numeric_limits<double>::epsilon() * magnitude +
                             2 * double(std::numeric_limits<T>::epsilon()) * std::fabs(expected);
    ASSERT_NEAR(double(acc.data<T>()[c]), expected, tolerance) << "column " << c;
  }
}

TEST(ReduceTest, SumRowsIntoAddsColumnSumsF32) { check_sum_rows<float>(); }
TEST(ReduceTest, SumRowsIntoAddsColumnSumsF64) { check_sum_rows<double>(); }

TEST(ReduceTest, SumRowsIntoIsTheSameForAnyThreadCount) {
  Tensor x = uniform_tensor<float>({4000, 300}, 13, -1, 3);
  Tensor results[3];
  for (int threads = 1; threads <= 3; ++threads) {
    ThreadCount scope(threads);
    results[threads - 1] = Tensor::zeros({300}, DType::F32, vitune::Device::cpu());
    ops::sum_rows_into(x, results[threads - 1]);
  }
  EXPECT_TRUE(vitune::testing::bitwise_equal(results[0], results[1]));
  EXPECT_TRUE(vitune::testing::bitwise_equal(results[0], results[2]));
}

template <typename T>
void check_sums() {
  Tensor x = uniform_tensor<T>({250001}, 14, -1, 3);
  double sum = 0, squares = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = double(x.data<T>()[i]);
    sum += v;
    squares += v * v;
  }
  EXPECT_NEAR(ops::sum_all(x), sum, 1e-12 * std::fabs(sum));
  EXPECT_NEAR(ops::sum_squares(x), squares, 1e-12 * squares);
}

TEST(ReduceTest, SumAllAndSumSquaresMatchDoubleSumsF32) { check_sums<float>(); }
TEST(ReduceTest, SumAllAndSumSquaresMatchDoubleSumsF64) { check_sums<double>(); }

TEST(ReduceTest, SumsAreExactOnSmallIntegersAndZeroWhenEmpty) {
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, -2, 3, 4, 5, -6}, vitune::Device::cpu());
  EXPECT_EQ(ops::sum_all(x), 5.0);
  EXPECT_EQ(ops::sum_squares(x), 91.0);
  EXPECT_EQ(ops::sum_all(Tensor::zeros({0}, DType::F32, vitune::Device::cpu())), 0.0);
  EXPECT_EQ(ops::sum_squares(Tensor::zeros({3, 0}, DType::F32, vitune::Device::cpu())), 0.0);
}

TEST(ReduceTest, SumsAreTheSameForAnyThreadCount) {
  Tensor x = uniform_tensor<float>({300007}, 15, -1, 3);
  double sums[3], squares[3];
  for (int threads = 1; threads <= 3; ++threads) {
    ThreadCount scope(threads);
    sums[threads - 1] = ops::sum_all(x);
    squares[threads - 1] = ops::sum_squares(x);
  }
  for (int i = 1; i < 3; ++i) {
    EXPECT_EQ(sums[i], sums[0]);
    EXPECT_EQ(squares[i], squares[0]);
  }
}

TEST(ReduceTest, AllFiniteFindsNanAndInfinityAnywhere) {
  Tensor x = uniform_tensor<float>({100000}, 16, -1, 3);
  EXPECT_TRUE(ops::all_finite(x));
  EXPECT_TRUE(ops::all_finite(Tensor::zeros({0}, DType::F32, vitune::Device::cpu())));
  const float bad[] = {std::numeric_limits<float>::quiet_NaN(),
                       std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity()};
  for (float value : bad) {
    for (int64_t position : {int64_t(0), int64_t(4097), int64_t(99999)}) {
      Tensor y = x.clone();
      y.data<float>()[position] = value;
      EXPECT_FALSE(ops::all_finite(y)) << value << " at " << position;
    }
  }
  Tensor d = Tensor::zeros({10}, DType::F64, vitune::Device::cpu());
  EXPECT_TRUE(ops::all_finite(d));
  d.data<double>()[9] = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(ops::all_finite(d));
}

TEST(ReduceTest, BadArgumentsThrow) {
  Tensor x = Tensor::zeros({4, 3}, DType::F32, vitune::Device::cpu());
  Tensor wrong_length = Tensor::zeros({4}, DType::F32, vitune::Device::cpu());
  EXPECT_THROW(ops::sum_rows_into(x, wrong_length), Error);
  Tensor wrong_dtype = Tensor::zeros({3}, DType::F64, vitune::Device::cpu());
  EXPECT_THROW(ops::sum_rows_into(x, wrong_dtype), Error);
  Tensor two_d = Tensor::zeros({1, 3}, DType::F32, vitune::Device::cpu());
  EXPECT_THROW(ops::sum_rows_into(x, two_d), Error);
  Tensor ints = Tensor::zeros({4}, DType::I64, vitune::Device::cpu());
  EXPECT_THROW(ops::sum_all(ints), Error);
  EXPECT_THROW(ops::sum_squares(ints), Error);
  EXPECT_THROW(ops::all_finite(ints), Error);
}

}  // namespace
