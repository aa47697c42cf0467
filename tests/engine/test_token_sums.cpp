// token_abs_sums_into, the per-feature statistic of GD-FPS, on the host: bit for bit the
// plain loop of its contract (per image, tokens summed in order in double, images added
// in order to what the accumulator held), for f32 and f64, across feature blocks, for
// any thread count and on the emulated device; bad shapes and mixed devices refused.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/error.h"
#include "engine/ops.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

// The contract, written out: accumulate[f] += s[b, f] for b in order, s[b, f] the sum
// over t in order of |x[b, t, f]|.
template <typename T>
std::vector<double> reference_sums(const Tensor& x, std::vector<double> total) {
  const int64_t batch = x.dim(0), tokens = x.dim(1), features = x.dim(2);
  const T* v = x.data<T>();
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t f = 0; f < features; ++f) {
      double s = 0;
      for (int64_t t = 0; t < tokens; ++t) s += std::fabs(double(v[(b * tokens + t) * features + f]));
      total[size_t(f)] += s;
    }
  }
  return total;
}

template <typename T>
void check_against_the_contract(const Shape& shape) {
  const Tensor x = uniform_tensor<T>(shape, 21, -2, 3);
  Tensor accumulate = uniform_tensor<double>({shape[2]}, 22, 0, 5);
  const std::vector<double> expected = reference_sums<T>(x, accumulate.to_vector<double>());
  ops::token_abs_sums_into(x, accumulate);
  EXPECT_EQ(accumulate.to_vector<double>(), expected) << shape_str(shape);
}

TEST(TokenAbsSums, EqualsTheContractBitForBit) {
  // Features across the host kernel's blocks of 256, one token, one image, no image.
  for (const Shape& shape : {Shape{3, 197, 300}, Shape{2, 1, 5}, Shape{1, 17, 768}, Shape{0, 4, 6}}) {
    check_against_the_contract<float>(shape);
    check_against_the_contract<double>(shape);
  }
}

TEST(TokenAbsSums, TheSameForAnyThreadCountAndOnTheEmulatedDevice) {
  const Tensor x = uniform_tensor<float>({5, 50, 600}, 23, -1, 1);
  std::vector<Tensor> results;
  for (int threads : {1, 2, 3}) {
    ThreadCount scope(threads);
    Tensor total = Tensor::zeros({600}, DType::F64, Device::cpu());
    ops::token_abs_sums_into(x, total);
    results.push_back(total);
  }
  Tensor on_emulated = Tensor::zeros({600}, DType::F64, Device::emulated());
  ops::token_abs_sums_into(x.to(Device::emulated()), on_emulated);
  EXPECT_EQ(on_emulated.device(), Device::emulated());
  results.push_back(on_emulated.to(Device::cpu()));
  for (size_t i = 1; i < results.size(); ++i) EXPECT_TRUE(bitwise_equal(results[i], results[0])) << i;
}

TEST(TokenAbsSums, RefusesBadShapesDtypesAndMixedDevices) {
  const Tensor x = uniform_tensor<float>({2, 3, 4}, 24, -1, 1);
  Tensor good = Tensor::zeros({4}, DType::F64, Device::cpu());
  Tensor wrong_length = Tensor::zeros({3}, DType::F64, Device::cpu());
  Tensor wrong_dtype = Tensor::zeros({4}, DType::F32, Device::cpu());
  Tensor on_emulated = Tensor::zeros({4}, DType::F64, Device::emulated());
  EXPECT_THROW(ops::token_abs_sums_into(x.reshape({6, 4}), good), Error);
  EXPECT_THROW(ops::token_abs_sums_into(x, wrong_length), Error);
  EXPECT_THROW(ops::token_abs_sums_into(x, wrong_dtype), Error);
  EXPECT_THROW(ops::token_abs_sums_into(Tensor::zeros({2, 3, 4}, DType::I64, Device::cpu()), good), Error);
  EXPECT_THROW(ops::token_abs_sums_into(x, on_emulated), Error);
  EXPECT_EQ(good.to_vector<double>(), std::vector<double>(4, 0.0)) << "a refused call wrote the accumulator";
}

TEST(ColumnSlice, CopiesTheColumnsOfEveryRow) {
  const Tensor x = uniform_tensor<float>({4, 10}, 25, -1, 1);
  const Tensor slice = ops::column_slice(x, 3, 5);
  ASSERT_EQ(slice.shape(), (Shape{4, 5}));
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t c = 0; c < 5; ++c) EXPECT_EQ(slice.data<float>()[r * 5 + c], x.data<float>()[r * 10 + 3 + c]);
  }
  const Tensor labels = Tensor::from_vector<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6}, Device::cpu());
  EXPECT_EQ(ops::column_slice(labels, 1, 2).to_vector<int64_t>(), (std::vector<int64_t>{2, 3, 5, 6}));
  EXPECT_EQ(ops::column_slice(x, 10, 0).shape(), (Shape{4, 0}));
  EXPECT_TRUE(bitwise_equal(ops::column_slice(x, 0, 10), x));
  const Tensor on_emulated = ops::column_slice(x.to(Device::emulated()), 3, 5);
  EXPECT_EQ(on_emulated.device(), Device::emulated());
  EXPECT_TRUE(bitwise_equal(on_emulated.to(Device::cpu()), slice));
}

TEST(ColumnSlice, RefusesColumnsOutsideTheMatrix) {
  const Tensor x = uniform_tensor<float>({4, 10}, 26, -1, 1);
  EXPECT_THROW(ops::column_slice(x, -1, 2), Error);
  EXPECT_THROW(ops::column_slice(x, 8, 3), Error);
  EXPECT_THROW(ops::column_slice(x, 11, 0), Error);
  EXPECT_THROW(ops::column_slice(x, 0, -1), Error);
  EXPECT_THROW(ops::column_slice(x.reshape({40}), 0, 1), Error);
}

}  // namespace
}  // namespace vitune::testing
