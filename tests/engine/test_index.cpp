// Tests of gather, gather_columns, scatter and scatter_add: values against plain loops,
// repeated indices (last write wins / each added in order), dtypes other than float for
// the moves, and clear errors that leave x untouched for bad indices or arguments.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "engine/error.h"
#include "engine/ops.h"
#include "test_util.h"

namespace {

using vitune::DType;
using vitune::Error;
using vitune::Tensor;
namespace ops = vitune::ops;

std::vector<int64_t> random_indices(int64_t count, int64_t limit, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int64_t> dist(0, limit - 1);
  std::vector<int64_t> v(static_cast<size_t>(count));
  for (int64_t& i : v) i = dist(gen);
  return v;
}

template <typename T>
Tensor counting_tensor(vitune::Shape shape) {
  std::vector<T> v(size_t(vitune::shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = T(i) * T(0.25) - T(7);
  return Tensor::from_vector(shape, v, vitune::Device::cpu());
}

TEST(IndexTest, GatherReadsFlatIndicesIntoTheIndicesShape) {
  Tensor x = counting_tensor<float>({30, 70});
  std::vector<int64_t> idx = random_indices(50000, x.numel(), 1);
  Tensor indices = Tensor::from_vector<int64_t>({250, 200}, idx, vitune::Device::cpu());
  Tensor out = ops::gather(x, indices);
  ASSERT_EQ(out.shape(), indices.shape());
  ASSERT_EQ(out.dtype(), DType::F32);
  for (size_t i = 0; i < idx.size(); ++i) ASSERT_EQ(out.data<float>()[i], x.data<float>()[idx[i]]);
}

TEST(IndexTest, GatherAndScatterMoveAnyDtype) {
  Tensor x = Tensor::from_vector<int64_t>({5}, {10, 11, 12, 13, 14}, vitune::Device::cpu());
  Tensor indices = Tensor::from_vector<int64_t>({3}, {4, 0, 4}, vitune::Device::cpu());
  EXPECT_EQ(ops::gather(x, indices).to_vector<int64_t>(), (std::vector<int64_t>{14, 10, 14}));
  Tensor bytes = Tensor::from_vector<uint8_t>({4}, {1, 2, 3, 4}, vitune::Device::cpu());
  ops::scatter(bytes, Tensor::from_vector<int64_t>({2}, {3, 0}, vitune::Device::cpu()),
               Tensor::from_vector<uint8_t>({2}, {9, 8}, vitune::Device::cpu()));
  EXPECT_EQ(bytes.to_vector<uint8_t>(), (std::vector<uint8_t>{8, 2, 3, 9}));
  Tensor d = counting_tensor<double>({3, 3});
  EXPECT_EQ(ops::gather(d, Tensor::from_vector<int64_t>({1}, {8}, vitune::Device::cpu())).item(0), d.item(8));
}

TEST(IndexTest, GatherColumnsCopiesTheNamedColumnsOfEveryRowInTheirOrder) {
  Tensor x = counting_tensor<float>({30, 70});
  const std::vector<int64_t> columns = {69, 0, 5, 5, 33};
  Tensor out = ops::gather_columns(x, Tensor::from_vector<int64_t>({5}, columns, vitune::Device::cpu()));
  ASSERT_EQ(out.shape(), (vitune::Shape{30, 5}));
  for (int64_t r = 0; r < 30; ++r) {
    for (size_t q = 0; q < columns.size(); ++q) {
      ASSERT_EQ(out.data<float>()[r * 5 + int64_t(q)], x.data<float>()[r * 70 + columns[q]]) << r << ", " << q;
    }
  }
  Tensor ints = Tensor::from_vector<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6}, vitune::Device::cpu());
  Tensor last_first = Tensor::from_vector<int64_t>({2}, {2, 0}, vitune::Device::cpu());
  EXPECT_EQ(ops::gather_columns(ints, last_first).to_vector<int64_t>(), (std::vector<int64_t>{3, 1, 6, 4}));
  EXPECT_EQ(ops::gather_columns(x, Tensor::zeros({0}, DType::I64, vitune::Device::cpu())).shape(),
            (vitune::Shape{30, 0}));
  Tensor on_emulated =
      ops::gather_columns(ints.to(vitune::Device::emulated()), last_first.to(vitune::Device::emulated()));
  EXPECT_EQ(on_emulated.device(), vitune::Device::emulated());
  EXPECT_EQ(on_emulated.to(vitune::Device::cpu()).to_vector<int64_t>(), (std::vector<int64_t>{3, 1, 6, 4}));
}

TEST(IndexTest, GatherColumnsRefusesColumnsOutsideTheMatrixAndBadShapes) {
  Tensor x = counting_tensor<float>({4, 6});
  try {
    ops::gather_columns(x, Tensor::from_vector<int64_t>({3}, {0, 6, 1}, vitune::Device::cpu()));
    FAIL() << "no error for column 6 of 6";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("gather_columns"), std::string::npos) << message;
    EXPECT_NE(message.find("index 6 at position 1"), std::string::npos) << message;
  }
  EXPECT_THROW(ops::gather_columns(x, Tensor::from_vector<int64_t>({1}, {-1}, vitune::Device::cpu())), Error);
  EXPECT_THROW(ops::gather_columns(x.reshape({24}), Tensor::from_vector<int64_t>({1}, {0}, vitune::Device::cpu())),
               Error);
  EXPECT_THROW(ops::gather_columns(x, Tensor::from_vector<int64_t>({1, 1}, {0}, vitune::Device::cpu())), Error);
  EXPECT_THROW(ops::gather_columns(x, Tensor::from_vector<int32_t>({1}, {0}, vitune::Device::cpu())), Error);
  EXPECT_THROW(ops::gather_columns(x, Tensor::from_vector<int64_t>({1}, {0}, vitune::Device::emulated())), Error);
}

TEST(IndexTest, ScatterWritesAndTheLastRepeatedIndexWins) {
  Tensor x = Tensor::zeros({6}, DType::F32, vitune::Device::cpu());
  ops::scatter(x, Tensor::from_vector<int64_t>({4}, {2, 5, 2, 0}, vitune::Device::cpu()),
               Tensor::from_vector<float>({4}, {1, 2, 3, 4}, vitune::Device::cpu()));
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{4, 0, 3, 0, 0, 2}));
}

template <typename T>
void check_scatter_add() {
  Tensor x = counting_tensor<T>({40, 25});
  Tensor expected = x.clone();
  std::vector<int64_t> idx = random_indices(20000, x.numel(), 2);
  Tensor values = counting_tensor<T>({20000});
  ops::scatter_add(x, Tensor::from_vector<int64_t>({20000}, idx, vitune::Device::cpu()), values);
  for (size_t i = 0; i < idx.size(); ++i) expected.data<T>()[idx[i]] += values.data<T>()[i];
  EXPECT_TRUE(vitune::testing::bitwise_equal(x, expected));
}

TEST(IndexTest, ScatterAddAddsRepeatedIndicesInOrderF32) { check_scatter_add<float>(); }
TEST(IndexTest, ScatterAddAddsRepeatedIndicesInOrderF64) { check_scatter_add<double>(); }

TEST(IndexTest, OutOfRangeIndexNamesPositionAndValueAndLeavesXUntouched) {
  Tensor x = counting_tensor<float>({2, 3});
  Tensor before = x.clone();
  Tensor bad = Tensor::from_vector<int64_t>({3}, {0, 1, 6}, vitune::Device::cpu());
  Tensor values = Tensor::from_vector<float>({3}, {1, 1, 1}, vitune::Device::cpu());
  try {
    ops::scatter_add(x, bad, values);
    FAIL() << "no error for index 6 into 6 elements";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("scatter_add"), std::string::npos) << message;
    EXPECT_NE(message.find("index 6"), std::string::npos) << message;
    EXPECT_NE(message.find("position 2"), std::string::npos) << message;
  }
  EXPECT_TRUE(vitune::testing::bitwise_equal(x, before));
  EXPECT_THROW(ops::scatter(x, bad, values), Error);
  EXPECT_TRUE(vitune::testing::bitwise_equal(x, before));
  EXPECT_THROW(ops::gather(x, Tensor::from_vector<int64_t>({1}, {-1}, vitune::Device::cpu())), Error);
  EXPECT_THROW(ops::gather(x, bad), Error);
}

TEST(IndexTest, BadArgumentsThrow) {
  Tensor x = Tensor::zeros({4}, DType::F32, vitune::Device::cpu());
  Tensor i32 = Tensor::from_vector<int32_t>({2}, {0, 1}, vitune::Device::cpu());
  EXPECT_THROW(ops::gather(x, i32), Error);
  Tensor indices = Tensor::from_vector<int64_t>({2}, {0, 1}, vitune::Device::cpu());
  EXPECT_THROW(ops::scatter(x, indices, Tensor::zeros({3}, DType::F32, vitune::Device::cpu())), Error);
  EXPECT_THROW(ops::scatter(x, indices, Tensor::zeros({2}, DType::F64, vitune::Device::cpu())), Error);
  Tensor ints = Tensor::zeros({4}, DType::I64, vitune::Device::cpu());
  EXPECT_THROW(ops::scatter_add(ints, indices, Tensor::zeros({2}, DType::I64, vitune::Device::cpu())), Error);
  EXPECT_THROW(ops::gather(Tensor(), indices), Error);
}

}  // namespace
