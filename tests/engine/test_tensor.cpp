// Tensor basics: shapes, views that share bytes, copies, dtype conversions including the
// bf16/f16 storage types, and the errors misuse gets.
#include <cmath>
#include <limits>

#include "engine/devices.h"
#include "engine/tensor.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

TEST(Tensor, ReshapeAndRowsAreViewsOfTheSameBytes) {
  Tensor t = Tensor::from_vector<float>({2, 3}, {0, 1, 2, 3, 4, 5}, Device::cpu());
  Tensor r = t.reshape({3, -1});
  EXPECT_EQ(r.shape(), Shape({3, 2}));
  EXPECT_TRUE(r.same_storage(t));
  Tensor second = t.rows(1, 2);
  EXPECT_EQ(second.shape(), Shape({1, 3}));
  EXPECT_EQ(second.item(0), 3.0);
  second.data<float>()[0] = 30;
  EXPECT_EQ(t.item(3), 30.0);
  Tensor copy = t.clone();
  copy.data<float>()[0] = -1;
  EXPECT_EQ(t.item(0), 0.0);
}

TEST(Tensor, MisuseIsAClearError) {
  Tensor t({2, 3}, DType::F32, Device::cpu());
  EXPECT_THROW(t.reshape({4, 2}), Error);
  EXPECT_THROW(t.reshape({-1, -1}), Error);
  EXPECT_THROW(t.rows(1, 3), Error);
  EXPECT_THROW(t.data<double>(), Error);
  EXPECT_THROW(t.dim(2), Error);
  EXPECT_THROW(Tensor({-1, 2}, DType::F32, Device::cpu()), Error);
}

// A shape whose byte size would overflow is refused before anything is allocated: 2^61
// f64 elements are 2^64 bytes, one past what size_t holds.
TEST(Tensor, AShapeWhoseBytesCannotBeCountedIsAClearError) {
  const int64_t half = int64_t(1) << 31;
  try {
    Tensor t({half, half / 2, 2}, DType::F64, Device::cpu());
    ADD_FAILURE() << "no error for a 2^61-element tensor";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("more elements than can be counted"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Tensor({std::numeric_limits<int64_t>::max(), 2}, DType::U8, Device::cpu()), Error);
}

TEST(Tensor, ConversionsBetweenNumericDtypes) {
  Tensor t = Tensor::from_vector<float>({4}, {-2.5f, 0.0f, 1.0f, 255.0f}, Device::cpu());
  EXPECT_EQ(t.to(DType::F64).to_vector<double>(), (std::vector<double>{-2.5, 0, 1, 255}));
  EXPECT_EQ(t.to(DType::I64).to_vector<int64_t>(), (std::vector<int64_t>{-2, 0, 1, 255}));
  EXPECT_EQ(Tensor::from_vector<uint8_t>({2}, {7, 200}, Device::cpu()).to(DType::F32).to_vector<float>(),
            (std::vector<float>{7, 200}));
}

TEST(Tensor, HalfAndBfloat16RoundTripRepresentableValuesExactly) {
  std::vector<float> values = {0.0f, -0.0f, 1.0f, -2.0f, 0.5f, 65280.0f, 6.103515625e-05f,
                               5.9604644775390625e-08f, std::numeric_limits<float>::infinity()};
  Tensor t = Tensor::from_vector<float>({int64_t(values.size())}, values, Device::cpu());
  EXPECT_TRUE(bitwise_equal(t.to(DType::F16).to(DType::F32), t));
  EXPECT_TRUE(bitwise_equal(t.to(DType::BF16).to(DType::F32), t));
  EXPECT_TRUE(std::isnan(Tensor::full({1}, NAN, DType::F32, Device::cpu()).to(DType::F16).to(DType::F32).item(0)));
  EXPECT_TRUE(std::isnan(Tensor::full({1}, NAN, DType::F32, Device::cpu()).to(DType::BF16).to(DType::F32).item(0)));
}

TEST(Tensor, HalfAndBfloat16RoundToNearestEven) {
  // 1 + 2^-11 lies halfway between two halves: ties to even gives 1.
  EXPECT_EQ(f16_to_f32(f32_to_f16(1.0f + 0.00048828125f)), 1.0f);
  EXPECT_EQ(f16_to_f32(f32_to_f16(1.0f + 3 * 0.00048828125f)), 1.0f + 4 * 0.00048828125f);
  EXPECT_EQ(f16_to_f32(f32_to_f16(70000.0f)), std::numeric_limits<float>::infinity());
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + 1.0f / 256)), 1.0f);
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + 3.0f / 256)), 1.0f + 4.0f / 256);
  // Subnormal halves: 3 * 2^-25 rounds to 2 * 2^-24 (ties to even).
  EXPECT_EQ(f16_to_f32(f32_to_f16(3 * 2.98023223876953125e-08f)), 2 * 5.9604644775390625e-08f);
}

// Where no CUDA device can be used (a build without CUDA, or no GPU), asking for device
// memory is a clear error, and host-only work never touches the CUDA backend.
TEST(Device, WithoutAGpuDeviceMemoryIsAClearError) {
  if (cuda::device_count() > 0) GTEST_SKIP() << "a CUDA device is present: tests/cuda covers it";
  try {
    Tensor t({4}, DType::F32, Device::cuda());
    FAIL() << "a tensor on cuda:0 was allocated without a device";
  } catch (const Error& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("cuda:0"), std::string::npos) << text;
    EXPECT_TRUE(text.find("no CUDA backend") != std::string::npos || text.find("no CUDA device") != std::string::npos)
        << text;
  }
  Tensor host = Tensor::from_vector<float>({2}, {1, 2}, Device::cpu());
  EXPECT_TRUE(host.to(Device::cpu()).same_storage(host));
  EXPECT_EQ(host.to_vector<float>(), std::vector<float>({1, 2}));
}

TEST(Device, ParsingNamesTheFlag) {
  EXPECT_EQ(parse_device("cpu"), Device::cpu());
  EXPECT_EQ(parse_device("cuda:1"), Device::cuda(1));
  try {
    parse_device("gpu", "--device");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--device"), std::string::npos);
  }
}

}  // namespace
}  // namespace vitune::testing
