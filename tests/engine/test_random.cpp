// Tests of the Philox generator and its distributions: the published Random123
// known-answer vectors, the (seed, stream, index) -> (key, counter) mapping, moments of
// uniform, normal and truncated normal samples, the redraw rule of the truncation,
// permutations (validity, seed and stream dependence, uniformity for n = 3), and the
// same bits for any thread count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <vector>

#include "engine/error.h"
#include "engine/random.h"
#include "test_util.h"

namespace {

using vitune::DType;
using vitune::Error;
using vitune::PhiloxBlock;
using vitune::Tensor;
using vitune::testing::ThreadCount;

constexpr int64_t kSamples = 100000;

struct Moments {
  double mean, variance, min, max;
};

Moments moments(const Tensor& t) {
  double sum = 0, min = INFINITY, max = -INFINITY;
  for (int64_t i = 0; i < t.numel(); ++i) {
    sum += t.item(i);
    min = std::min(min, t.item(i));
    max = std::max(max, t.item(i));
  }
  const double mean = sum / double(t.numel());
  double squares = 0;
  for (int64_t i = 0; i < t.numel(); ++i) squares += (t.item(i) - mean) * (t.item(i) - mean);
  return {mean, squares / double(t.numel() - 1), min, max};
}

void expect_block(const uint32_t counter[4], const uint32_t key[2],
                  std::vector<uint32_t> expected) {
  PhiloxBlock block = vitune::philox_raw(counter, key);
  EXPECT_EQ(std::vector<uint32_t>(block.word, block.word + 4), expected);
}

TEST(RandomTest, PhiloxMatchesKnownAnswerVectors) {
  const uint32_t zero_counter[4] = {0, 0, 0, 0}, zero_key[2] = {0, 0};
  expect_block(zero_counter, zero_key, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  const uint32_t ones_counter[4] = {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff};
  const uint32_t ones_key[2] = {0xffffffff, 0xffffffff};
  expect_block(ones_counter, ones_key, {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  const uint32_t pi_counter[4] = {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344};
  const uint32_t pi_key[2] = {0xa4093822, 0x299f31d0};
  expect_block(pi_counter, pi_key, {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

TEST(RandomTest, SeedStreamAndIndexMapToKeyAndCounter) {
  PhiloxBlock block = vitune::philox(0x299f31d0a4093822ull, 0x0370734413198a2eull,
                                     0x85a308d3243f6a88ull);
  EXPECT_EQ(std::vector<uint32_t>(block.word, block.word + 4),
            (std::vector<uint32_t>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
  PhiloxBlock zero = vitune::philox(0, 0, 0);
  EXPECT_EQ(zero.word[0], 0x6627e8d5u);
}

TEST(RandomTest, UniformUsesTheTop24BitsOfTheFirstWord) {
  for (uint64_t i : {0ull, 1ull, 12345ull}) {
    const uint32_t word = vitune::philox(7, 3, i).word[0];
    EXPECT_EQ(vitune::uniform01(7, 3, i), float(word >> 8) / 16777216.0f);
  }
}

TEST(RandomTest, UniformMoments) {
  Tensor t({kSamples}, DType::F32, vitune::Device::cpu());
  vitune::fill_uniform(t, 42, 0, 0.0, 1.0);
  Moments m = moments(t);
  EXPECT_NEAR(m.mean, 0.5, 0.005);
  EXPECT_NEAR(m.variance, 1.0 / 12.0, 0.0015);
  EXPECT_GE(m.min, 0.0);
  EXPECT_LT(m.max, 1.0);
  Tensor shifted({kSamples}, DType::F64, vitune::Device::cpu());
  vitune::fill_uniform(shifted, 42, 1, -3.0, 5.0);
  Moments s = moments(shifted);
  EXPECT_NEAR(s.mean, 1.0, 0.04);
  EXPECT_NEAR(s.variance, 64.0 / 12.0, 0.1);
  EXPECT_GE(s.min, -3.0);
  EXPECT_LT(s.max, 5.0);
}

TEST(RandomTest, NormalMoments) {
  Tensor t({kSamples}, DType::F32, vitune::Device::cpu());
  vitune::fill_normal(t, 42, 0, 0.0, 1.0);
  Moments m = moments(t);
  EXPECT_NEAR(m.mean, 0.0, 0.016);
  EXPECT_NEAR(m.variance, 1.0, 0.025);
  Tensor scaled({kSamples}, DType::F64, vitune::Device::cpu());
  vitune::fill_normal(scaled, 43, 0, 2.0, 0.5);
  Moments s = moments(scaled);
  EXPECT_NEAR(s.mean, 2.0, 0.008);
  EXPECT_NEAR(s.variance, 0.25, 0.00625);
  EXPECT_TRUE(std::isfinite(s.min) && std::isfinite(s.max));
}

TEST(RandomTest, TruncatedNormalStaysWithinTwoDeviationsAndRedrawsFromLaterCounters) {
  const double stddev = 0.02;
  Tensor t({kSamples}, DType::F32, vitune::Device::cpu());
  vitune::fill_trunc_normal(t, 5, 9, stddev);
  Moments m = moments(t);
  EXPECT_GE(m.min, -2 * stddev * (1 + 1e-6));
  EXPECT_LE(m.max, 2 * stddev * (1 + 1e-6));
  // Variance of a standard normal truncated to [-2, 2]: 1 - 4 phi(2) / (2 Phi(2) - 1).
  const double truncated_variance = 1 - 4 * 0.05399096651318806 / 0.9544997361036416;
  EXPECT_NEAR(m.mean, 0.0, 0.016 * stddev);
  EXPECT_NEAR(m.variance, truncated_variance * stddev * stddev, 0.025 * stddev * stddev);
  int redrawn = 0;
  for (int64_t i = 0; i < 2000; ++i) {
    uint64_t counter = uint64_t(i);
    float z = vitune::standard_normal(5, 9, counter);
    while (std::fabs(z) > 2.0f) {
      counter += uint64_t(kSamples);
      z = vitune::standard_normal(5, 9, counter);
      ++redrawn;
    }
    ASSERT_EQ(t.data<float>()[i], float(stddev * double(z))) << "element " << i;
  }
  EXPECT_GT(redrawn, 0);
}

TEST(RandomTest, PermutationIsAPermutationThatDependsOnSeedAndStream) {
  std::vector<int64_t> p = vitune::permutation(1000, 1, 0);
  std::vector<int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> identity(1000);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(sorted, identity);
  EXPECT_NE(p, identity);
  EXPECT_EQ(vitune::permutation(1000, 1, 0), p);
  EXPECT_NE(vitune::permutation(1000, 2, 0), p);
  EXPECT_NE(vitune::permutation(1000, 1, 1), p);
  EXPECT_TRUE(vitune::permutation(0, 1, 0).empty());
  EXPECT_EQ(vitune::permutation(1, 1, 0), (std::vector<int64_t>{0}));
  EXPECT_THROW(vitune::permutation(-1, 1, 0), Error);
}

TEST(RandomTest, PermutationsOfThreeAreEquallyLikely) {
  const int trials = 6000;
  std::map<std::vector<int64_t>, int> counts;
  for (int seed = 0; seed < trials; ++seed) ++counts[vitune::permutation(3, uint64_t(seed), 4)];
  ASSERT_EQ(counts.size(), 6u);
  // Each count is binomial(6000, 1/6): mean 1000, standard deviation about 29.
  for (const auto& entry : counts) EXPECT_NEAR(entry.second, 1000, 150);
}

TEST(RandomTest, FillsAreTheSameForAnyThreadCount) {
  Tensor results[3][3];
  for (int threads = 1; threads <= 3; ++threads) {
    ThreadCount scope(threads);
    Tensor* r = results[threads - 1];
    r[0] = Tensor({kSamples}, DType::F32, vitune::Device::cpu());
    vitune::fill_uniform(r[0], 11, 2, -1.0, 1.0);
    r[1] = Tensor({kSamples}, DType::F64, vitune::Device::cpu());
    vitune::fill_normal(r[1], 11, 2, 0.0, 1.0);
    r[2] = Tensor({kSamples}, DType::F32, vitune::Device::cpu());
    vitune::fill_trunc_normal(r[2], 11, 2, 1.0);
  }
  for (int kind = 0; kind < 3; ++kind) {
    EXPECT_TRUE(vitune::testing::bitwise_equal(results[0][kind], results[1][kind])) << kind;
    EXPECT_TRUE(vitune::testing::bitwise_equal(results[0][kind], results[2][kind])) << kind;
  }
}

TEST(RandomTest, BadArgumentsThrow) {
  Tensor ints({4}, DType::I32, vitune::Device::cpu());
  EXPECT_THROW(vitune::fill_uniform(ints, 1, 0, 0.0, 1.0), Error);
  EXPECT_THROW(vitune::fill_normal(ints, 1, 0, 0.0, 1.0), Error);
  Tensor f({4}, DType::F32, vitune::Device::cpu());
  EXPECT_THROW(vitune::fill_uniform(f, 1, 0, 1.0, 0.0), Error);
  EXPECT_THROW(vitune::fill_normal(f, 1, 0, 0.0, -1.0), Error);
  EXPECT_THROW(vitune::fill_trunc_normal(f, 1, 0, -1.0), Error);
}

}  // namespace
