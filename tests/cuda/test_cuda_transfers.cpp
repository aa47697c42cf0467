// Copies to the GPU staged through pinned memory, and uploads started ahead of use
// (engine/device_memory.h, engine/upload.h): the host may change its bytes as soon as a
// copy returns, and the copy does not wait for the work queued before it; many copies
// in flight, and more than the pinned pool holds at once, keep their values; a dropped
// upload still orders its block's reuse; the device's reserved bytes and the pinned
// pool are accounted. The device is kept busy with large GEMMs first, so that each copy
// really waits in the queue (except under VITUNE_CUDA_SYNC=1, where every launch waits).
#include <cstring>
#include <vector>

#include "engine/allocator.h"
#include "engine/device_memory.h"
#include "engine/devices.h"
#include "engine/ops.h"
#include "engine/upload.h"
#include "op_harness.h"

namespace vitune::testing {
namespace {

class CudaTransfers : public CudaTest {};

// Queues about 3.5 TFLOP of f64 GEMMs (tens of milliseconds on any GPU) and returns
// their output, which must stay alive while they run.
Tensor keep_busy() {
  const Tensor a = Tensor::zeros({4096, 4096}, DType::F64, gpu());
  Tensor c({4096, 4096}, DType::F64, gpu());
  for (int i = 0; i < 25; ++i) ops::gemm(false, false, 1.0, a, a, 0.0, c);
  return c;
}

// Whether the queue can be seen to be busy (every launch waits under VITUNE_CUDA_SYNC=1).
bool asynchronous() { return !cuda::launch_sync(); }

TEST_F(CudaTransfers, HostBytesMayChangeAsSoonAsACopyReturns) {
  const Tensor original = uniform({int64_t(24) << 20}, DType::F32, 940);  // 96 MiB: two staging chunks
  Tensor host = original.clone();
  const Tensor busy = keep_busy();
  const Tensor on_gpu = host.to(gpu());
  if (asynchronous()) {
    EXPECT_FALSE(cuda::idle(0)) << "the copy waited for the work queued before it";
  }
  host.fill(-7);
  EXPECT_TRUE(bitwise_equal(on_gpu.to(Device::cpu()), original));
}

// 300 small copies queued behind the GEMMs each hold a pinned block until the device has
// read it; a block given out again too early would change the sum.
TEST_F(CudaTransfers, ManySmallCopiesInFlightKeepTheirValues) {
  Tensor host({1000}, DType::F32, Device::cpu());
  Tensor total = Tensor::zeros({1000}, DType::F32, gpu());
  const Tensor busy = keep_busy();
  for (int i = 0; i < 300; ++i) {
    host.fill(i);
    ops::axpy(1.0, host.to(gpu()), total);
  }
  for (float v : total.to_vector<float>()) ASSERT_EQ(v, 44850.0f);  // 0 + 1 + ... + 299, exact
}

// 24 copies of 64 MiB are more than the pool's default 1 GiB: the host waits for the
// oldest copies to finish before reusing their blocks, and every value arrives.
TEST_F(CudaTransfers, CopiesBeyondThePinnedPoolWaitForTheirBlocks) {
  const int64_t n = int64_t(16) << 20;
  Tensor host({n}, DType::F32, Device::cpu());
  Tensor total = Tensor::zeros({n}, DType::F32, gpu());
  const Tensor busy = keep_busy();
  for (int i = 0; i < 24; ++i) {
    host.fill(i);
    ops::axpy(1.0, host.to(gpu()), total);
  }
  const std::vector<float> values = total.to_vector<float>();
  for (int64_t j = 0; j < n; j += 4099) ASSERT_EQ(values[size_t(j)], 276.0f) << j;  // 0 + ... + 23
  ASSERT_EQ(values.back(), 276.0f);
  EXPECT_GT(cuda::pinned_staging_bytes(), 0);
}

TEST_F(CudaTransfers, ALargeOddSizedCopyRoundTrips) {
  const int64_t n = (int64_t(150) << 20) + 5;  // three chunks, the last one odd
  Tensor host({n}, DType::U8, Device::cpu());
  std::vector<uint8_t> pattern(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) pattern[size_t(i)] = uint8_t((i * 131 + i / 4093) & 0xff);
  std::memcpy(host.raw(), pattern.data(), size_t(n));
  EXPECT_TRUE(bitwise_equal(host.to(gpu()).to(Device::cpu()), host));
}

TEST_F(CudaTransfers, AnUploadRunsBesideQueuedWorkAndTakeOrdersItsUse) {
  const Tensor original = uniform({int64_t(4) << 20}, DType::F32, 941);
  Tensor host = original.clone();
  const Tensor busy = keep_busy();
  Upload upload(host, gpu());
  host.fill(3);  // the bytes were staged when the upload was made
  if (asynchronous()) {
    EXPECT_FALSE(cuda::idle(0));
  }
  const Tensor arrived = upload.take();
  EXPECT_EQ(arrived.device(), gpu());
  EXPECT_TRUE(bitwise_equal(ops::scale(arrived, 1.0).to(Device::cpu()), original));
}

// The pattern of the training loop: batch k + 1 is uploaded while batch k is used.
TEST_F(CudaTransfers, UploadsAheadOfUseKeepEveryBatch) {
  Tensor host({100000}, DType::F32, Device::cpu());
  Tensor total = Tensor::zeros({100000}, DType::F32, gpu());
  auto batch = [&](int i) {
    host.fill(i);
    return Upload(host, gpu());
  };
  Upload ahead = batch(0);
  for (int i = 0; i < 20; ++i) {
    const Tensor current = ahead.take();
    ahead = batch(i + 1);
    ops::axpy(1.0, current, total);
    ops::axpy(1.0, current, total);
  }
  for (float v : total.to_vector<float>()) ASSERT_EQ(v, 380.0f);  // 2 * (0 + ... + 19)
}

// A dropped upload's block goes back to the cache; the next tensor of its size gets it
// and is zeroed. The late copy must land before the zeros, never after them.
TEST_F(CudaTransfers, ADroppedUploadStillOrdersItsBlocksReuse) {
  const Tensor ones = Tensor::full({int64_t(8) << 20}, 1.0, DType::F32, Device::cpu());
  const Tensor busy = keep_busy();
  { Upload dropped(ones, gpu()); }
  const Tensor zeros = Tensor::zeros(ones.shape(), DType::F32, gpu());
  EXPECT_EQ(ops::sum_all(zeros), 0.0);
}

TEST_F(CudaTransfers, SynchronizeWaitsForUploadsToo) {
  const Tensor host = uniform({int64_t(1) << 20}, DType::F32, 942);
  const Tensor busy = keep_busy();
  Upload upload(host, gpu());
  synchronize(gpu());
  EXPECT_TRUE(cuda::idle(0));
  EXPECT_TRUE(bitwise_equal(upload.take().to(Device::cpu()), host));
}

// Requested bytes are what tensors asked for; reserved bytes are the cudaMalloc'd blocks
// (rounded to 2 MiB from 1 MiB on), cached ones included, until the cache is released.
TEST_F(CudaTransfers, ReservedBytesCountCudaMallocBlocksCachedOnesIncluded) {
  synchronize(gpu());
  release_cached_memory();
  const MemoryStats before = memory_stats(gpu());
  EXPECT_GE(before.reserved_bytes, before.current_bytes);
  reset_peak_memory(gpu());
  EXPECT_EQ(memory_stats(gpu()).peak_reserved_bytes, before.reserved_bytes);
  const int64_t requested = (int64_t(3) << 20) + 4, rounded = int64_t(4) << 20;
  {
    Tensor t({requested}, DType::U8, gpu());
    const MemoryStats during = memory_stats(gpu());
    EXPECT_EQ(during.current_bytes, before.current_bytes + requested);
    EXPECT_EQ(during.reserved_bytes, before.reserved_bytes + rounded);
    EXPECT_EQ(during.peak_reserved_bytes, before.reserved_bytes + rounded);
  }
  const MemoryStats cached = memory_stats(gpu());
  EXPECT_EQ(cached.current_bytes, before.current_bytes);
  EXPECT_EQ(cached.reserved_bytes, before.reserved_bytes + rounded) << "a cached block is still reserved";
  release_cached_memory();
  const MemoryStats after = memory_stats(gpu());
  EXPECT_EQ(after.reserved_bytes, before.reserved_bytes);
  EXPECT_EQ(after.peak_reserved_bytes, before.reserved_bytes + rounded);
  reset_peak_memory(gpu());
  EXPECT_EQ(memory_stats(gpu()).peak_reserved_bytes, before.reserved_bytes);
}

TEST_F(CudaTransfers, ReleasingCachedMemoryFreesIdlePinnedBlocks) {
  Tensor on_gpu = uniform({int64_t(1) << 20}, DType::F32, 943).to(gpu());
  EXPECT_GT(cuda::pinned_staging_bytes(), 0);
  synchronize(gpu());
  release_cached_memory();
  EXPECT_EQ(cuda::pinned_staging_bytes(), 0);
}

}  // namespace
}  // namespace vitune::testing
