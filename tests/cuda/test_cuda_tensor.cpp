// Tensors on the GPU: host -> device -> host round trips of every dtype bit for bit
// (views and empty tensors included); zeros, fill, clone, copy_from, to(DType) and item
// on the device; the device's current and peak bytes as tensors come and go, the cache
// of freed blocks; and a request larger than the device that fails with a clear error.
#include <cstring>
#include <string>
#include <vector>

#include "engine/allocator.h"
#include "engine/error.h"
#include "engine/random.h"
#include "op_harness.h"

namespace vitune::testing {
namespace {

class CudaTensor : public CudaTest {};

constexpr DType kAllTypes[] = {DType::F32, DType::F64, DType::I32, DType::I64, DType::U8, DType::BF16, DType::F16};

// A host tensor whose bytes are random words: every bit pattern of the dtype may occur
// (NaN payloads, subnormals, negative zero).
Tensor random_bits(const Shape& shape, DType dtype, uint64_t stream) {
  Tensor t(shape, dtype, Device::cpu());
  std::vector<uint32_t> words((t.nbytes() + 3) / 4);
  for (size_t i = 0; i < words.size(); i += 4) {
    PhiloxBlock block = philox(77, stream, i / 4);
    for (size_t j = 0; j < 4 && i + j < words.size(); ++j) words[i + j] = block.word[j];
  }
  if (t.nbytes() > 0) std::memcpy(t.raw(), words.data(), t.nbytes());
  return t;
}

TEST_F(CudaTensor, RoundTripsEveryDtypeBitExactly) {
  for (DType dt : kAllTypes) {
    for (const Shape& shape : {Shape{1001}, Shape{3, 5, 7}, Shape{0, 4}, Shape{}}) {
      Tensor original = random_bits(shape, dt, 1);
      Tensor on_gpu = original.to(gpu());
      EXPECT_EQ(on_gpu.device(), gpu());
      EXPECT_EQ(on_gpu.shape(), shape);
      EXPECT_EQ(on_gpu.dtype(), dt);
      Tensor back = on_gpu.to(Device::cpu());
      EXPECT_TRUE(back.device().is_cpu());
      EXPECT_TRUE(bitwise_equal(back, original)) << dtype_name(dt) << shape_str(shape);
    }
  }
}

TEST_F(CudaTensor, ToTheSameDeviceSharesTheTensor) {
  Tensor on_gpu = random_bits({10}, DType::F32, 2).to(gpu());
  EXPECT_TRUE(on_gpu.to(gpu()).same_storage(on_gpu));
}

// Views start at an offset into their storage: that offset must hold on both sides.
TEST_F(CudaTensor, ViewsCopyTheirOwnRowsOnly) {
  Tensor host = random_bits({10, 6}, DType::F64, 3);
  Tensor host_rows = host.rows(3, 7);
  EXPECT_TRUE(bitwise_equal(host_rows.to(gpu()).to(Device::cpu()), host_rows));
  Tensor on_gpu = host.to(gpu());
  Tensor gpu_rows = on_gpu.rows(2, 9).reshape({7, 3, 2});
  EXPECT_TRUE(bitwise_equal(gpu_rows.to(Device::cpu()), host.rows(2, 9).reshape({7, 3, 2})));
  EXPECT_TRUE(bitwise_equal(gpu_rows.clone().to(Device::cpu()), host.rows(2, 9).reshape({7, 3, 2})));
}

// The block of a freed tensor filled with ones comes back from the cache for the next
// tensor of that size: zeros() must clear it.
TEST_F(CudaTensor, ZerosAndFillOnTheDevice) {
  const Shape shape{1 << 18};
  for (DType dt : {DType::F32, DType::F64, DType::I64}) {
    {
      Tensor ones(shape, dt, gpu());
      ones.fill(1);
    }
    Tensor zeros = Tensor::zeros(shape, dt, gpu());
    EXPECT_EQ(zeros.device(), gpu());
    Tensor host = zeros.to(Device::cpu());
    std::vector<char> expected(host.nbytes(), 0);
    EXPECT_EQ(std::memcmp(host.raw(), expected.data(), host.nbytes()), 0) << dtype_name(dt);
    zeros.fill(2.5);
    EXPECT_EQ(zeros.item(0), dt == DType::I64 ? 2.0 : 2.5);
    EXPECT_EQ(zeros.item((1 << 18) - 1), dt == DType::I64 ? 2.0 : 2.5);
  }
  Tensor cleared = random_bits({100}, DType::F32, 4).to(gpu());
  cleared.zero();
  for (float v : cleared.to_vector<float>()) ASSERT_EQ(v, 0.0f);
}

TEST_F(CudaTensor, CloneIsAnIndependentDeviceCopy) {
  const Tensor original = uniform({64, 3}, DType::F32, 5), replacement = uniform({64, 3}, DType::F32, 6);
  Tensor on_gpu = original.to(gpu());
  Tensor copy = on_gpu.clone();
  EXPECT_EQ(copy.device(), gpu());
  EXPECT_FALSE(copy.same_storage(on_gpu));
  on_gpu.copy_from(replacement);
  EXPECT_TRUE(bitwise_equal(copy.to(Device::cpu()), uniform({64, 3}, DType::F32, 5)));
  EXPECT_TRUE(bitwise_equal(on_gpu.to(Device::cpu()), replacement));
}

// copy_from between every pair of host and device tensors.
TEST_F(CudaTensor, CopyFromBetweenHostAndDevice) {
  Tensor a = uniform({17, 5}, DType::F64, 7), b = uniform({17, 5}, DType::F64, 8);
  Tensor on_gpu(a.shape(), a.dtype(), gpu());
  on_gpu.copy_from(a);  // host -> device
  EXPECT_TRUE(bitwise_equal(on_gpu.to(Device::cpu()), a));
  Tensor other_gpu(a.shape(), a.dtype(), gpu());
  other_gpu.copy_from(on_gpu);  // device -> device
  EXPECT_TRUE(bitwise_equal(other_gpu.to(Device::cpu()), a));
  Tensor host = b.clone();
  host.copy_from(other_gpu);  // device -> host
  EXPECT_TRUE(bitwise_equal(host, a));
  EXPECT_THROW(on_gpu.copy_from(uniform({5, 17}, DType::F64, 9)), Error);
  EXPECT_THROW(on_gpu.copy_from(uniform({17, 5}, DType::F32, 9)), Error);
}

TEST_F(CudaTensor, ItemToVectorAndDtypeConversionReadTheDevice) {
  Tensor host = uniform({3, 7}, DType::F64, 10);
  Tensor on_gpu = host.to(gpu());
  for (int64_t i : {0, 5, 20}) EXPECT_EQ(on_gpu.item(i), host.item(i)) << i;
  EXPECT_THROW(on_gpu.item(21), Error);
  EXPECT_EQ(on_gpu.to_vector<double>(), host.to_vector<double>());
  Tensor as_f32 = on_gpu.to(DType::F32);
  EXPECT_EQ(as_f32.device(), gpu());
  EXPECT_TRUE(bitwise_equal(as_f32.to(Device::cpu()), host.to(DType::F32)));
  Tensor labels = Tensor::from_vector<int64_t>({4}, {3, -1, int64_t(1) << 40, 0}, Device::cpu()).to(gpu());
  EXPECT_EQ(labels.to_vector<int64_t>(), (std::vector<int64_t>{3, -1, int64_t(1) << 40, 0}));
}

TEST_F(CudaTensor, MemoryStatsFollowDeviceTensorsAndResetPeakStartsAPhase) {
  const MemoryStats before = memory_stats(gpu());
  const int64_t host_before = memory_stats(Device::cpu()).current_bytes;
  reset_peak_memory(gpu());
  EXPECT_EQ(memory_stats(gpu()).peak_bytes, before.current_bytes);
  {
    Tensor a({1000}, DType::F32, gpu());
    Tensor b({250}, DType::F64, gpu());
    const MemoryStats during = memory_stats(gpu());
    EXPECT_EQ(during.current_bytes, before.current_bytes + 6000);
    EXPECT_EQ(during.peak_bytes, before.current_bytes + 6000);
    EXPECT_GE(during.allocations, before.allocations + 2);
    EXPECT_EQ(memory_stats(Device::cpu()).current_bytes, host_before) << "device bytes counted as host bytes";
  }
  MemoryStats after = memory_stats(gpu());
  EXPECT_EQ(after.current_bytes, before.current_bytes);
  EXPECT_EQ(after.peak_bytes, before.current_bytes + 6000);
  reset_peak_memory(gpu());
  EXPECT_EQ(memory_stats(gpu()).peak_bytes, before.current_bytes);
  {
    Tensor c({1 << 20}, DType::F32, gpu());
  }
  EXPECT_EQ(memory_stats(gpu()).peak_bytes, before.current_bytes + (int64_t(4) << 20));
  EXPECT_EQ(memory_stats(gpu()).current_bytes, before.current_bytes);
}

// Freed blocks are cached, not counted as held, and reused for the same size; releasing
// the cache empties it.
TEST_F(CudaTensor, FreedBlocksAreCachedAndReleased) {
  release_cached_memory();
  const int64_t bytes = int64_t(3) << 20;
  void* first = nullptr;
  {
    Tensor t({bytes / 4}, DType::F32, gpu());
    first = t.kernel_raw();
  }
  EXPECT_GE(memory_stats(gpu()).cached_bytes, bytes);
  {
    Tensor again({bytes / 4}, DType::F32, gpu());
    EXPECT_EQ(again.kernel_raw(), first);
  }
  release_cached_memory();
  EXPECT_EQ(memory_stats(gpu()).cached_bytes, 0);
}

TEST_F(CudaTensor, AHugeAllocationIsAClearErrorNamingTheBytes) {
  const int64_t held = memory_stats(gpu()).current_bytes;
  const int64_t elements = int64_t(1) << 40;  // 4 TiB of f32
  try {
    Tensor huge({elements}, DType::F32, gpu());
    ADD_FAILURE() << "a 4 TiB tensor was allocated";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(std::to_string(elements * 4)), std::string::npos) << message;
    EXPECT_NE(message.find("cuda:0"), std::string::npos) << message;
  }
  EXPECT_EQ(memory_stats(gpu()).current_bytes, held);
  Tensor small = Tensor::zeros({16}, DType::F32, gpu());
  EXPECT_EQ(small.item(15), 0.0);
}

}  // namespace
}  // namespace vitune::testing
