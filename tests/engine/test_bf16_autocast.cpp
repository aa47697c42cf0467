// bf16 autocast: round_to_bf16, and Tensor::to between f32 and bf16 storage on every
// device, against the scalar conversions of engine/dtype.h on edge values (ties to even,
// subnormals, the top of the range, infinities, NaN) and random values; ops::gemm and
// gemm_batched under AutocastBf16Scope against a float64 product of the bf16-rounded
// operands in every transpose combination, and far from the plain fp32 product (so the
// scope demonstrably acts); the scope restores the previous setting; f64 products are
// never rounded.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "engine/autocast.h"
#include "engine/devices.h"
#include "engine/dtype.h"
#include "engine/ops.h"
#include "engine/random.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

uint32_t bits_of(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

float float_of(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

// The scalar reference: through the 16-bit pattern and back.
float scalar_round(float value) { return bf16_to_f32(f32_to_bf16(value)); }

std::vector<float> rounded(const std::vector<float>& values) {
  return ops::round_to_bf16(Tensor::from_vector<float>({int64_t(values.size())}, values, Device::cpu())).to_vector<float>();
}

const float inf = std::numeric_limits<float>::infinity();

// Ties to even, subnormals, the top of the range, infinities and NaNs.
std::vector<float> edge_values() {
  return {
      0.0f, -0.0f, 1.0f, -1.0f,
      1.0f + 0x1p-8f,             // halfway between 1 and 1 + 2^-7: ties to the even 1
      1.0f + 3 * 0x1p-8f,         // halfway between 1 + 2^-7 (odd) and 1 + 2^-6: up
      1.0f + 0x1p-8f + 0x1p-20f,  // just above a tie: up
      -(1.0f + 3 * 0x1p-8f),
      std::numeric_limits<float>::max(),       // past the largest bf16: infinity
      float_of(0x7f7f0000u),                   // the largest bf16, exact
      float_of(0x7f7f7fffu),                   // just below the tie at the top: stays finite
      std::numeric_limits<float>::min(),       // smallest normal, exact in bf16
      std::numeric_limits<float>::denorm_min(),  // rounds to zero
      float_of(0x00010000u), float_of(0x00018000u), float_of(0x00028000u),  // subnormals, ties
      float_of(0x807fffffu),                   // largest negative subnormal: to -FLT_MIN
      inf, -inf,
      std::numeric_limits<float>::quiet_NaN(), float_of(0x7f800001u), float_of(0xff812345u)};
}

TEST(RoundToBf16, EdgeValuesRoundLikeTheScalarConversion) {
  const std::vector<float> values = edge_values();
  const std::vector<float> got = rounded(values);
  for (size_t i = 0; i < values.size(); ++i) {
    const float expected = scalar_round(values[i]);
    if (std::isnan(values[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i;
      EXPECT_EQ(bits_of(got[i]), bits_of(expected)) << "NaN element " << i;
    } else {
      EXPECT_EQ(bits_of(got[i]), bits_of(expected)) << "element " << i << " = " << values[i];
    }
  }
  // The same expectations written out, independent of dtype.cpp.
  EXPECT_EQ(got[4], 1.0f);
  EXPECT_EQ(got[5], 1.0f + 0x1p-6f);
  EXPECT_EQ(got[6], 1.0f + 0x1p-7f);
  EXPECT_EQ(got[7], -(1.0f + 0x1p-6f));
  EXPECT_EQ(got[8], inf);
  EXPECT_EQ(got[9], values[9]);
  EXPECT_EQ(got[10], values[9]);
  EXPECT_EQ(got[11], values[11]);
  EXPECT_EQ(bits_of(got[12]), 0u);
  EXPECT_EQ(bits_of(got[13]), 0x00010000u);
  EXPECT_EQ(bits_of(got[14]), 0x00020000u);  // tie, even kept part 0x0001 -> 0x0002
  EXPECT_EQ(bits_of(got[15]), 0x00020000u);  // tie, even kept part 0x0002 stays
  EXPECT_EQ(bits_of(got[16]), 0x80800000u);
  EXPECT_EQ(got[17], inf);
  EXPECT_EQ(got[18], -inf);
}

TEST(RoundToBf16, RandomValuesRoundLikeTheScalarConversion) {
  Tensor x({20000}, DType::F32, Device::cpu());
  fill_normal(x, 11, 1, 0.0, 1.0);
  float* p = x.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) p[i] *= std::ldexp(1.0f, int(i % 161) - 80);  // many exponents
  const std::vector<float> got = ops::round_to_bf16(x).to_vector<float>();
  int64_t changed = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    ASSERT_EQ(bits_of(got[i]), bits_of(scalar_round(p[i]))) << "element " << i << " = " << p[i];
    EXPECT_EQ(bits_of(got[i]) & 0xffffu, 0u);
    EXPECT_LE(std::fabs(double(got[i]) - p[i]), std::ldexp(std::fabs(double(p[i])), -8));
    changed += got[i] != p[i];
  }
  EXPECT_GT(changed, x.numel() * 9 / 10);
}

// Tensor::to between f32 and bf16 storage (the vectorised host loop, the CUDA kernel)
// against the scalar conversions, element by element: the edge values repeated past
// one thread's share of the elements, then random values of many exponents.
TEST(RoundToBf16, StorageConversionsMatchTheScalarOnesOnEveryDevice) {
  std::vector<float> values;
  while (values.size() < 70000) {
    for (float v : edge_values()) values.push_back(v);
  }
  Tensor random({30000}, DType::F32, Device::cpu());
  fill_normal(random, 12, 1, 0.0, 1.0);
  for (int64_t i = 0; i < random.numel(); ++i) {
    values.push_back(random.item(i) * std::ldexp(1.0, int(i % 161) - 80));  // many exponents
  }
  const Tensor x = Tensor::from_vector<float>({int64_t(values.size())}, values, Device::cpu());
  for (Device device : available_devices()) {
    const Tensor bf16 = x.to(device).to(DType::BF16);
    ASSERT_EQ(bf16.dtype(), DType::BF16);
    ASSERT_EQ(bf16.device(), device);
    const Tensor back = bf16.to(DType::F32);
    ASSERT_EQ(back.device(), device);
    const Tensor host_bf16 = bf16.to(Device::cpu()), host_back = back.to(Device::cpu());
    const uint16_t* half = static_cast<const uint16_t*>(host_bf16.raw());
    const float* widened = host_back.data<float>();
    for (size_t i = 0; i < values.size(); ++i) {
      ASSERT_EQ(half[i], f32_to_bf16(values[i])) << device.str() << ", element " << i << " = " << values[i];
      ASSERT_EQ(bits_of(widened[i]), bits_of(bf16_to_f32(half[i]))) << device.str() << ", element " << i;
    }
  }
}

TEST(RoundToBf16, RefusesOtherDtypes) {
  EXPECT_THROW(ops::round_to_bf16(Tensor::zeros({3}, DType::F64, Device::cpu())), Error);
  EXPECT_THROW(ops::round_to_bf16(Tensor::zeros({3}, DType::I64, Device::cpu())), Error);
}

Tensor random_matrix(Shape shape, uint64_t stream) {
  Tensor t(std::move(shape), DType::F32, Device::cpu());
  fill_normal(t, 5, stream, 0.0, 1.0);
  return t;
}

Shape operand(bool transposed, int64_t rows, int64_t cols) {
  return transposed ? Shape{cols, rows} : Shape{rows, cols};
}

// The product of the bf16-rounded operands, in float64.
Tensor rounded_reference(bool ta, bool tb, double alpha, const Tensor& a, const Tensor& b, double beta,
                         const Tensor& c) {
  Tensor expected = c.to(DType::F64).clone();
  ops::gemm_reference(ta, tb, alpha, ops::round_to_bf16(a).to(DType::F64), ops::round_to_bf16(b).to(DType::F64),
                      beta, expected);
  return expected;
}

// fp32 accumulation of 53 exact products of bf16 values.
constexpr Tolerance kAccumulation{1e-5, 1e-5};
// bf16 rounding of N(0,1) operands moves such a product by ~1e-2; fp32 noise is ~1e-6.
constexpr double kRoundingVisible = 1e-3;

TEST(Bf16Autocast, GemmUsesRoundedOperandsInEveryTransposeCombination) {
  const int64_t m = 37, n = 29, k = 53;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const std::string what = std::string("ta=") + (ta ? "1" : "0") + " tb=" + (tb ? "1" : "0");
      Tensor a = random_matrix(operand(ta, m, k), 1), b = random_matrix(operand(tb, k, n), 2);
      Tensor c = random_matrix({m, n}, 3);
      Tensor plain = c.clone();
      const Tensor expected = rounded_reference(ta, tb, 0.5, a, b, 2.0, c);
      {
        AutocastBf16Scope autocast;
        ops::gemm(ta, tb, 0.5, a, b, 2.0, c);
      }
      ops::gemm(ta, tb, 0.5, a, b, 2.0, plain);
      EXPECT_TRUE(tensors_close(c, expected, kAccumulation, what));
      EXPECT_GT(max_difference(plain, expected), kRoundingVisible) << what;
    }
  }
}

TEST(Bf16Autocast, GemmFoldsLeadingDimensionsAndHonoursBetaZero) {
  Tensor a = random_matrix({3, 5, 40}, 4), b = random_matrix({24, 40}, 5);
  Tensor c = Tensor::full({3, 5, 24}, std::nan(""), DType::F32, Device::cpu());
  const Tensor expected =
      rounded_reference(false, true, 1.0, a.reshape({15, 40}), b, 0.0, Tensor::zeros({15, 24}, DType::F32, Device::cpu()));
  {
    AutocastBf16Scope autocast;
    ops::gemm(false, true, 1.0, a, b, 0.0, c);
  }
  EXPECT_TRUE(tensors_close(c.reshape({15, 24}), expected, kAccumulation));
}

TEST(Bf16Autocast, GemmBatchedUsesRoundedOperandsInEveryTransposeCombination) {
  const int64_t stack = 3, m = 17, n = 13, k = 45;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const std::string what = std::string("ta=") + (ta ? "1" : "0") + " tb=" + (tb ? "1" : "0");
      Shape sa = operand(ta, m, k), sb = operand(tb, k, n);
      Tensor a = random_matrix({stack, sa[0], sa[1]}, 6), b = random_matrix({stack, sb[0], sb[1]}, 7);
      Tensor c = random_matrix({stack, m, n}, 8);
      Tensor plain = c.clone();
      std::vector<Tensor> expected;
      for (int64_t s = 0; s < stack; ++s) {
        expected.push_back(rounded_reference(ta, tb, -1.5, a.rows(s, s + 1).reshape(sa),
                                             b.rows(s, s + 1).reshape(sb), 0.5, c.rows(s, s + 1).reshape({m, n})));
      }
      {
        AutocastBf16Scope autocast;
        ops::gemm_batched(ta, tb, -1.5, a, b, 0.5, c);
      }
      ops::gemm_batched(ta, tb, -1.5, a, b, 0.5, plain);
      for (int64_t s = 0; s < stack; ++s) {
        const std::string slice = what + " stack " + std::to_string(s);
        EXPECT_TRUE(tensors_close(c.rows(s, s + 1).reshape({m, n}), expected[s], kAccumulation, slice));
        EXPECT_GT(max_difference(plain.rows(s, s + 1).reshape({m, n}), expected[s]), kRoundingVisible) << slice;
      }
    }
  }
}

TEST(Bf16Autocast, ScopeRestoresThePreviousSetting) {
  ASSERT_FALSE(autocast_bf16());
  {
    AutocastBf16Scope on;
    EXPECT_TRUE(autocast_bf16());
    {
      AutocastBf16Scope off(false);
      EXPECT_FALSE(autocast_bf16());
    }
    EXPECT_TRUE(autocast_bf16());
  }
  EXPECT_FALSE(autocast_bf16());
  set_autocast_bf16(true);
  {
    AutocastBf16Scope off(false);
    EXPECT_FALSE(autocast_bf16());
  }
  EXPECT_TRUE(autocast_bf16());
  set_autocast_bf16(false);
}

TEST(Bf16Autocast, Float64ProductsAreNeverRounded) {
  Tensor a = random_matrix({2, 9, 31}, 9).to(DType::F64), b = random_matrix({2, 31, 7}, 10).to(DType::F64);
  Tensor single = Tensor::zeros({9, 7}, DType::F64, Device::cpu()), stacked = Tensor::zeros({2, 9, 7}, DType::F64, Device::cpu());
  {
    AutocastBf16Scope autocast;
    ops::gemm(false, false, 1.0, a.rows(0, 1).reshape({9, 31}), b.rows(0, 1).reshape({31, 7}), 0.0, single);
    ops::gemm_batched(false, false, 1.0, a, b, 0.0, stacked);
  }
  for (int64_t s = 0; s < 2; ++s) {
    Tensor exact = Tensor::zeros({9, 7}, DType::F64, Device::cpu());
    ops::gemm_reference(false, false, 1.0, a.rows(s, s + 1).reshape({9, 31}), b.rows(s, s + 1).reshape({31, 7}),
                        0.0, exact);
    if (s == 0) {
      EXPECT_TRUE(tensors_close(single, exact, kF64Exact, "gemm"));
    }
    EXPECT_TRUE(tensors_close(stacked.rows(s, s + 1).reshape({9, 7}), exact, kF64Exact, "gemm_batched"));
  }
}

}  // namespace
}  // namespace vitune::testing
