// The emulated device: host memory run by the CPU kernels under a device identity of its
// own. Host code cannot read its tensors without an explicit copy, ops refuse to mix it
// with the cpu naming both devices, outputs stay on it, its bytes are accounted apart,
// and every op gives the cpu's bits.
#include "engine/allocator.h"
#include "engine/devices.h"
#include "engine/ops.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

const Device kEmulated = Device::emulated();

// The message of the Error that `f` throws ("" when it throws none).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(EmulatedDevice, IsAlwaysAvailableAndParsed) {
  const std::vector<Device> devices = available_devices();
  ASSERT_GE(devices.size(), 2u);
  EXPECT_EQ(devices[0], Device::cpu());
  EXPECT_EQ(devices[1], kEmulated);
  EXPECT_EQ(parse_device("emulated"), kEmulated);
  EXPECT_EQ(kEmulated.str(), "emulated");
  EXPECT_NE(kEmulated, Device::cpu());
  EXPECT_TRUE(kEmulated.host_memory());
  EXPECT_NO_THROW(check_device_available(kEmulated, "--device"));
}

TEST(EmulatedDevice, HostReadsNeedAnExplicitCopy) {
  Tensor t = Tensor::from_vector<float>({3}, {1, 2, 3}, kEmulated);
  EXPECT_EQ(t.device(), kEmulated);
  const std::string message = error_of([&] { t.data<float>(); });
  EXPECT_NE(message.find("on emulated"), std::string::npos) << message;
  EXPECT_NE(message.find(".to(Device::cpu())"), std::string::npos) << message;
  EXPECT_FALSE(error_of([&] { t.raw(); }).empty());
  // The explicit ways: a copy, item and to_vector (which copy).
  const Tensor host = t.to(Device::cpu());
  EXPECT_FALSE(host.same_storage(t));
  EXPECT_EQ(host.data<float>()[2], 3.0f);
  EXPECT_EQ(t.item(1), 2.0);
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>({1, 2, 3}));
}

TEST(EmulatedDevice, FactoriesConversionsAndFillsStayOnTheDevice) {
  EXPECT_EQ(Tensor::zeros({2}, DType::F64, kEmulated).device(), kEmulated);
  Tensor full = Tensor::full({2}, 1.5, DType::F32, kEmulated);
  EXPECT_EQ(full.device(), kEmulated);
  EXPECT_EQ(full.to_vector<float>(), std::vector<float>({1.5f, 1.5f}));
  const Tensor wide = full.to(DType::F64);
  EXPECT_EQ(wide.device(), kEmulated);
  EXPECT_EQ(wide.to_vector<double>(), std::vector<double>({1.5, 1.5}));
  EXPECT_EQ(full.clone().device(), kEmulated);
  EXPECT_EQ(Tensor::like(full, {4}).device(), kEmulated);
  Tensor random({4}, DType::F32, kEmulated);
  fill_normal(random, 1, 2, 0.0, 1.0);
  Tensor on_cpu({4}, DType::F32, Device::cpu());
  fill_normal(on_cpu, 1, 2, 0.0, 1.0);
  EXPECT_TRUE(bitwise_equal(random, on_cpu));
}

TEST(EmulatedDevice, AnOpRefusesToMixItWithTheCpuNamingBoth) {
  const Tensor a = Tensor::from_vector<float>({2}, {1, 2}, kEmulated);
  const Tensor b = Tensor::from_vector<float>({2}, {3, 4}, Device::cpu());
  const std::string message = error_of([&] { ops::add(a, b); });
  EXPECT_NE(message.find("add"), std::string::npos) << message;
  EXPECT_NE(message.find("emulated"), std::string::npos) << message;
  EXPECT_NE(message.find("cpu"), std::string::npos) << message;
  Tensor c = Tensor::zeros({2, 2}, DType::F32, Device::cpu());
  EXPECT_NE(error_of([&] { ops::gemm(false, false, 1.0, a.reshape({2, 1}), b.reshape({1, 2}), 0.0, c); })
                .find("gemm"),
            std::string::npos);
}

TEST(EmulatedDevice, OpsGiveTheCpuBitsOnTheDevice) {
  const Tensor x = random_normal({6, 8}, DType::F32, 3, 0), w = random_normal({8}, DType::F32, 3, 1),
               bias = random_normal({8}, DType::F32, 3, 2);
  Tensor mean_cpu, rstd_cpu, mean_emulated, rstd_emulated;
  const Tensor on_cpu = ops::gelu_forward(ops::layer_norm_forward(x, w, bias, 1e-6, mean_cpu, rstd_cpu));
  const Tensor on_emulated = ops::gelu_forward(ops::layer_norm_forward(
      x.to(kEmulated), w.to(kEmulated), bias.to(kEmulated), 1e-6, mean_emulated, rstd_emulated));
  EXPECT_EQ(on_emulated.device(), kEmulated);
  EXPECT_EQ(mean_emulated.device(), kEmulated);
  EXPECT_TRUE(bitwise_equal(on_emulated, on_cpu));
  Tensor product = Tensor::zeros({6, 6}, DType::F32, kEmulated), product_cpu = Tensor::zeros({6, 6}, DType::F32, Device::cpu());
  ops::gemm(false, true, 1.0, x.to(kEmulated), x.to(kEmulated), 0.0, product);
  ops::gemm(false, true, 1.0, x, x, 0.0, product_cpu);
  EXPECT_TRUE(bitwise_equal(product, product_cpu));
}

TEST(EmulatedDevice, ItsBytesAreAccountedApartFromTheCpus) {
  reset_peak_memory(kEmulated);
  const int64_t cpu_before = memory_stats(Device::cpu()).current_bytes;
  const int64_t before = memory_stats(kEmulated).current_bytes;
  {
    Tensor t({1 << 16}, DType::F32, kEmulated);
    EXPECT_EQ(memory_stats(kEmulated).current_bytes, before + (int64_t(1) << 18));
    EXPECT_EQ(memory_stats(Device::cpu()).current_bytes, cpu_before);
  }
  EXPECT_EQ(memory_stats(kEmulated).current_bytes, before);
  EXPECT_GE(memory_stats(kEmulated).peak_bytes, before + (int64_t(1) << 18));
}

TEST(EmulatedDevice, AnUndefinedTensorHasNoDevice) {
  const Tensor undefined;
  EXPECT_FALSE(error_of([&] { undefined.device(); }).empty());
  EXPECT_FALSE(undefined.to(kEmulated).defined());
}

}  // namespace
}  // namespace vitune::testing
