// Tests of the CPU elementwise ops (add, mul, scale, axpy, add_row_broadcast) against
// plain loops written here, in f32 and f64, and their errors on bad arguments.
#include <gtest/gtest.h>

#include "engine/error.h"
#include "engine/ops.h"
#include "test_util.h"

namespace {

using vitune::DType;
using vitune::Error;
using vitune::Tensor;
using vitune::testing::uniform_tensor;
namespace ops = vitune::ops;

// Enough elements that the ops split the work over several chunks.
constexpr int64_t kLarge = 100003;

template <typename T>
void check_binary_ops() {
  Tensor a = uniform_tensor<T>({kLarge}, 1, -2, 2), b = uniform_tensor<T>({kLarge}, 2, -2, 2);
  Tensor sum = ops::add(a, b), product = ops::mul(a, b), scaled = ops::scale(a, -0.75);
  Tensor y = b.clone();
  ops::axpy(0.5, a, y);
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  for (int64_t i = 0; i < kLarge; ++i) {
    ASSERT_EQ(sum.data<T>()[i], pa[i] + pb[i]) << i;
    ASSERT_EQ(product.data<T>()[i], pa[i] * pb[i]) << i;
    ASSERT_EQ(scaled.data<T>()[i], pa[i] * T(-0.75)) << i;
    ASSERT_EQ(y.data<T>()[i], pb[i] + T(0.5) * pa[i]) << i;
  }
  EXPECT_EQ(sum.dtype(), a.dtype());
  EXPECT_EQ(sum.shape(), a.shape());
}

TEST(ElementwiseTest, BinaryOpsMatchPlainLoopsF32) { check_binary_ops<float>(); }
TEST(ElementwiseTest, BinaryOpsMatchPlainLoopsF64) { check_binary_ops<double>(); }

TEST(ElementwiseTest, OpsKeepMultiDimensionalShapes) {
  Tensor a = uniform_tensor<float>({2, 3, 4}, 3, -2, 2), b = uniform_tensor<float>({2, 3, 4}, 4, -2, 2);
  EXPECT_EQ(ops::add(a, b).shape(), a.shape());
  EXPECT_EQ(ops::scale(a, 2).shape(), a.shape());
  Tensor empty = Tensor::zeros({0, 5}, DType::F32, vitune::Device::cpu());
  EXPECT_EQ(ops::mul(empty, empty).numel(), 0);
}

template <typename T>
void check_row_broadcast() {
  Tensor x = uniform_tensor<T>({3, 700, 50}, 5, -2, 2);
  Tensor row = uniform_tensor<T>({50}, 6, -2, 2);
  Tensor before = x.clone();
  ops::add_row_broadcast(x, row);
  for (int64_t r = 0; r < 3 * 700; ++r) {
    for (int64_t c = 0; c < 50; ++c) {
      ASSERT_EQ(x.data<T>()[r * 50 + c], before.data<T>()[r * 50 + c] + row.data<T>()[c]);
    }
  }
}

TEST(ElementwiseTest, AddRowBroadcastAddsTheRowToEveryRowF32) { check_row_broadcast<float>(); }
TEST(ElementwiseTest, AddRowBroadcastAddsTheRowToEveryRowF64) { check_row_broadcast<double>(); }

TEST(ElementwiseTest, BadArgumentsThrow) {
  Tensor a = Tensor::zeros({2, 3}, DType::F32, vitune::Device::cpu());
  Tensor other_shape = Tensor::zeros({3, 2}, DType::F32, vitune::Device::cpu());
  Tensor other_dtype = Tensor::zeros({2, 3}, DType::F64, vitune::Device::cpu());
  Tensor ints = Tensor::zeros({2, 3}, DType::I32, vitune::Device::cpu());
  EXPECT_THROW(ops::add(a, other_shape), Error);
  EXPECT_THROW(ops::mul(a, other_dtype), Error);
  EXPECT_THROW(ops::add(ints, ints), Error);
  EXPECT_THROW(ops::scale(ints, 2), Error);
  EXPECT_THROW(ops::axpy(1, other_shape, a), Error);
  EXPECT_THROW(ops::add(a, Tensor()), Error);
  Tensor wrong_row = Tensor::zeros({2}, DType::F32, vitune::Device::cpu());
  EXPECT_THROW(ops::add_row_broadcast(a, wrong_row), Error);
  EXPECT_THROW(ops::add_row_broadcast(a, Tensor::zeros({1, 3}, DType::F32, vitune::Device::cpu())), Error);
  EXPECT_THROW(ops::add_row_broadcast(a, Tensor::zeros({3}, DType::F64, vitune::Device::cpu())), Error);
  try {
    ops::add_row_broadcast(a, wrong_row);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("add_row_broadcast"), std::string::npos) << e.what();
  }
}

}  // namespace
