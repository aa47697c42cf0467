// Tests of masked_weight_grad against the dense weight gradient dy^T x computed with a
// plain triple loop here and read at the selected indices: exact on integer-valued f64
// data, tight tolerances on random f64 and f32 data; bitwise against its definition
// (float sums over tiles of 32 tokens, added in double); accumulation, multi-dimensional
// inputs, thread-count independence, and clear errors for bad selections.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "engine/error.h"
#include "engine/ops.h"
#include "test_util.h"

namespace {

using vitune::DType;
using vitune::Error;
using vitune::Shape;
using vitune::Tensor;
using vitune::testing::ThreadCount;
using vitune::testing::uniform_tensor;
namespace ops = vitune::ops;

// Small integers in [-9, 9] as f64, so that every sum of products is exact.
Tensor integer_tensor(const Shape& shape, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> small(-9, 9);
  std::vector<double> v(size_t(vitune::shape_numel(shape)));
  for (double& x : v) x = double(small(gen));
  return Tensor::from_vector(shape, v, vitune::Device::cpu());
}

// A sorted, unique random subset of [0, limit) of about `fraction` of its size.
Tensor random_selection(int64_t limit, double fraction, unsigned seed) {
  std::mt19937 gen(seed);
  std::bernoulli_distribution keep(fraction);
  std::vector<int64_t> v;
  for (int64_t e = 0; e < limit; ++e) {
    if (keep(gen)) v.push_back(e);
  }
  return Tensor::from_vector<int64_t>({int64_t(v.size())}, v, vitune::Device::cpu());
}

// dense[j * in + k] = sum_t dy[t, j] * x[t, k], in double, t in order.
template <typename T>
std::vector<double> dense_gradient(const Tensor& dy, const Tensor& x, int64_t in) {
  const int64_t out = dy.dim(-1), tokens = x.numel() / in;
  std::vector<double> dense(size_t(out * in), 0.0);
  for (int64_t j = 0; j < out; ++j) {
    for (int64_t k = 0; k < in; ++k) {
      double s = 0;
      for (int64_t t = 0; t < tokens; ++t) {
        s += double(dy.data<T>()[t * out + j]) * double(x.data<T>()[t * in + k]);
      }
      dense[size_t(j * in + k)] = s;
    }
  }
  return dense;
}

TEST(MaskedGradTest, ExactOnIntegerDataF64) {
  const int64_t tokens = 53, in = 37, out = 29;
  Tensor x = integer_tensor({tokens, in}, 1);
  Tensor dy = integer_tensor({tokens, out}, 2);
  Tensor indices = random_selection(out * in, 0.3, 3);
  Tensor acc = integer_tensor({indices.numel()}, 4);
  Tensor before = acc.clone();
  ops::masked_weight_grad(dy, x, indices, in, acc);
  std::vector<double> dense = dense_gradient<double>(dy, x, in);
  for (int64_t i = 0; i < indices.numel(); ++i) {
    const int64_t e = indices.data<int64_t>()[i];
    ASSERT_EQ(acc.data<double>()[i], before.data<double>()[i] + dense[size_t(e)]) << "entry " << e;
  }
}

template <typename T>
void check_random(vitune::testing::Tolerance tol, int64_t in = 48) {
  const int64_t out = 40;
  // 333 tokens: two chunks, a partial lane block.
  Tensor x = uniform_tensor<T, double>({3, 111, in}, 5, -1, 1);
  Tensor dy = uniform_tensor<T, double>({3, 111, out}, 6, -1, 1);
  Tensor indices = random_selection(out * in, 0.2, 7);
  Tensor acc = Tensor::zeros({indices.numel()}, x.dtype(), vitune::Device::cpu());
  ops::masked_weight_grad(dy, x, indices, in, acc);
  std::vector<double> dense = dense_gradient<T>(dy, x, in);
  Tensor expected = Tensor::zeros({indices.numel()}, DType::F64, vitune::Device::cpu());
  for (int64_t i = 0; i < indices.numel(); ++i) {
    expected.data<double>()[i] = dense[size_t(indices.data<int64_t>()[i])];
  }
  EXPECT_TRUE(vitune::testing::tensors_close(acc, expected, tol, "masked_weight_grad"));
}

TEST(MaskedGradTest, MatchesDenseGradientF64) { check_random<double>({1e-13, 1e-12}); }
// On AVX-512, rows of x of at most 64 floats are read from registers by permutes, wider
// ones by gathers: one test for each.
TEST(MaskedGradTest, MatchesDenseGradientF32) { check_random<float>({1e-5, 1e-5}); }
TEST(MaskedGradTest, MatchesDenseGradientF32WideRows) { check_random<float>({1e-5, 1e-5}, 100); }

// One entry per row, as a sparse step selects: groups of 16 entries in 16 consecutive
// rows (read by a plain load on AVX-512) and a partial group, over 600 tokens (three
// chunks), for rows of x that fill part of four registers, all four, and more (a
// gather). Integer-valued f32 data, so every sum is exact and must match bitwise.
class MaskedGradOneEntryPerRow : public ::testing::TestWithParam<int64_t> {};

TEST_P(MaskedGradOneEntryPerRow, IsExactOnIntegerDataF32) {
  const int64_t tokens = 600, in = GetParam(), out = 37;
  Tensor x = integer_tensor({tokens, in}, 13).to(DType::F32);
  Tensor dy = integer_tensor({tokens, out}, 14).to(DType::F32);
  std::vector<int64_t> one_per_row;
  for (int64_t j = 0; j < out; ++j) one_per_row.push_back(j * in + (7 * j) % in);
  Tensor indices = Tensor::from_vector<int64_t>({out}, one_per_row, vitune::Device::cpu());
  Tensor acc = Tensor::zeros({out}, DType::F32, vitune::Device::cpu());
  ops::masked_weight_grad(dy, x, indices, in, acc);
  std::vector<double> dense = dense_gradient<float>(dy, x, in);
  for (int64_t j = 0; j < out; ++j) {
    ASSERT_EQ(acc.data<float>()[j], float(dense[size_t(one_per_row[size_t(j)])])) << "row " << j;
  }
}

INSTANTIATE_TEST_SUITE_P(InFeatures, MaskedGradOneEntryPerRow, ::testing::Values(19, 64, 150));

// The kernel's fixed chunk and tile of tokens (kTokenChunk and kTokenTile in
// engine/cpu/masked_grad.cpp).
constexpr int64_t kChunk = 256, kTile = 32;

// The sum the kernel defines: per chunk of kChunk tokens and tile of kTile, the float
// sum of the tile's terms by fused multiply-adds in token order, added to the chunk's
// double sum; the chunks' sums added in order, and that total, as a float, to what the
// accumulator held.
std::vector<float> tiled_float_sums(const Tensor& dy, const Tensor& x, const std::vector<int64_t>& entries,
                                    int64_t in, std::vector<float> accumulated) {
  const int64_t out = dy.dim(-1), tokens = x.numel() / in;
  const float* dy_data = dy.data<float>();
  const float* x_data = x.data<float>();
  for (size_t i = 0; i < entries.size(); ++i) {
    const int64_t j = entries[i] / in, k = entries[i] % in;
    double total = 0;
    for (int64_t chunk = 0; chunk < tokens; chunk += kChunk) {
      double partial = 0;
      for (int64_t tile = chunk; tile < std::min(tokens, chunk + kChunk); tile += kTile) {
        float tile_sum = 0;
        for (int64_t t = tile; t < std::min({tokens, chunk + kChunk, tile + kTile}); ++t) {
          tile_sum = std::fma(dy_data[t * out + j], x_data[t * in + k], tile_sum);
        }
        partial += double(tile_sum);
      }
      total += partial;
    }
    accumulated[i] += float(total);
  }
  return accumulated;
}

// Selections of the bitwise test, and the rows of W they need.
enum class Selection { OnePerRow, TwoPerRow, Alternating };

// OnePerRow: entry (j, 7j mod in) of 250 rows, 15 whole groups of 16 consecutive rows
// (the AVX-512 kernel takes them 8, 4, 2 and 1 at a time) and 10 left over. TwoPerRow:
// two entries in each of 250 rows, so no group lies in 16 consecutive rows (gathers).
// Alternating: 14 times 16 rows of one entry, then 16 rows of two: groups in
// consecutive rows, then two that are not, period 3, which no run of 8, 4, 2 or 1
// groups lines up with; 672 entries in 448 rows, a full block of 32 groups (512
// entries) and a second of 10.
std::vector<int64_t> selection(Selection kind, int64_t in, int64_t& out) {
  std::vector<int64_t> entries;
  auto add_row = [&](int64_t j, int64_t per_row) {
    for (int64_t m = 0; m < per_row; ++m) entries.push_back(j * in + (7 * j + m * (in / 2)) % in);
    std::sort(entries.end() - per_row, entries.end());
  };
  if (kind == Selection::Alternating) {
    out = 448;
    for (int64_t j = 0; j < out; ++j) add_row(j, j % 32 < 16 ? 1 : 2);
  } else {
    out = 250;
    for (int64_t j = 0; j < out; ++j) add_row(j, kind == Selection::OnePerRow ? 1 : 2);
  }
  return entries;
}

// Random f32 data, bitwise against the definition above, into an accumulator that
// already holds values, on 3 threads: the selections above over 600 tokens (the last
// tile of 24), for rows of x read by permutes (19, 64 floats) and by gathers (150).
class MaskedGradDefinition : public ::testing::TestWithParam<std::tuple<int64_t, Selection>> {};

TEST_P(MaskedGradDefinition, IsMetBitwiseF32) {
  const auto [in, kind] = GetParam();
  const int64_t tokens = 600;
  int64_t out = 0;
  const std::vector<int64_t> entries = selection(kind, in, out);
  Tensor x = uniform_tensor<float, double>({tokens, in}, 15, -1, 1);
  Tensor dy = uniform_tensor<float, double>({tokens, out}, 16, -1, 1);
  Tensor indices = Tensor::from_vector<int64_t>({int64_t(entries.size())}, entries, vitune::Device::cpu());
  Tensor acc = uniform_tensor<float, double>({indices.numel()}, 17, -1, 1);
  const std::vector<float> expected = tiled_float_sums(dy, x, entries, in, acc.to_vector<float>());
  ThreadCount scope(3);
  ops::masked_weight_grad(dy, x, indices, in, acc);
  const std::vector<float> got = acc.to_vector<float>();
  for (size_t i = 0; i < entries.size(); ++i) ASSERT_EQ(got[i], expected[i]) << "entry " << entries[i];
}

std::string definition_case_name(const ::testing::TestParamInfo<std::tuple<int64_t, Selection>>& info) {
  const char* names[] = {"OnePerRow", "TwoPerRow", "Alternating"};
  return "In" + std::to_string(std::get<0>(info.param)) + names[int(std::get<1>(info.param))];
}

INSTANTIATE_TEST_SUITE_P(InFeaturesAndSelections, MaskedGradDefinition,
                         ::testing::Combine(::testing::Values(19, 64, 150),
                                            ::testing::Values(Selection::OnePerRow, Selection::TwoPerRow,
                                                              Selection::Alternating)),
                         definition_case_name);

TEST(MaskedGradTest, EverySelectedAndNoneSelected) {
  const int64_t tokens = 16, in = 5, out = 3;
  Tensor x = integer_tensor({tokens, in}, 8);
  Tensor dy = integer_tensor({tokens, out}, 9);
  std::vector<int64_t> all(out * in);
  for (size_t i = 0; i < all.size(); ++i) all[i] = int64_t(i);
  Tensor acc = Tensor::zeros({out * in}, DType::F64, vitune::Device::cpu());
  ops::masked_weight_grad(dy, x, Tensor::from_vector<int64_t>({out * in}, all, vitune::Device::cpu()), in, acc);
  EXPECT_EQ(acc.to_vector<double>(), dense_gradient<double>(dy, x, in));
  Tensor none_acc = Tensor::zeros({0}, DType::F64, vitune::Device::cpu());
  ops::masked_weight_grad(dy, x, Tensor::zeros({0}, DType::I64, vitune::Device::cpu()), in, none_acc);
}

TEST(MaskedGradTest, SameForAnyThreadCount) {
  const int64_t tokens = 300, in = 64, out = 96;
  Tensor x = uniform_tensor<float, double>({tokens, in}, 10, -1, 1);
  Tensor dy = uniform_tensor<float, double>({tokens, out}, 11, -1, 1);
  Tensor indices = random_selection(out * in, 0.5, 12);
  Tensor results[3];
  for (int threads = 1; threads <= 3; ++threads) {
    ThreadCount scope(threads);
    results[threads - 1] = Tensor::zeros({indices.numel()}, DType::F32, vitune::Device::cpu());
    ops::masked_weight_grad(dy, x, indices, in, results[threads - 1]);
  }
  EXPECT_TRUE(vitune::testing::bitwise_equal(results[0], results[1]));
  EXPECT_TRUE(vitune::testing::bitwise_equal(results[0], results[2]));
}

void expect_error_containing(const std::string& needle, const Tensor& dy, const Tensor& x,
                             const Tensor& indices, int64_t in, Tensor acc) {
  try {
    ops::masked_weight_grad(dy, x, indices, in, acc);
    ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(MaskedGradTest, BadArgumentsThrowClearErrors) {
  Tensor x = Tensor::zeros({4, 3}, DType::F32, vitune::Device::cpu());
  Tensor dy = Tensor::zeros({4, 2}, DType::F32, vitune::Device::cpu());
  auto idx = [](std::vector<int64_t> v) {
    return Tensor::from_vector<int64_t>({int64_t(v.size())}, v, vitune::Device::cpu());
  };
  Tensor acc3 = Tensor::zeros({3}, DType::F32, vitune::Device::cpu());
  expect_error_containing("sorted and unique", dy, x, idx({0, 4, 2}), 3, acc3);
  expect_error_containing("sorted and unique", dy, x, idx({0, 2, 2}), 3, acc3);
  expect_error_containing("index 6 at position 2", dy, x, idx({0, 2, 6}), 3, acc3);
  expect_error_containing("index -1 at position 0", dy, x, idx({-1, 2, 3}), 3, acc3);
  expect_error_containing("in_features", dy, x, idx({0, 1, 2}), 4, acc3);
  expect_error_containing("rows", Tensor::zeros({5, 2}, DType::F32, vitune::Device::cpu()), x, idx({0, 1, 2}), 3, acc3);
  expect_error_containing("one element per index", dy, x, idx({0, 1}), 3, acc3);
  expect_error_containing("dtype", dy, x, idx({0, 1, 2}), 3, Tensor::zeros({3}, DType::F64, vitune::Device::cpu()));
  expect_error_containing("i64", dy, x, Tensor::from_vector<int32_t>({3}, {0, 1, 2}, vitune::Device::cpu()), 3, acc3);
}

}  // namespace
