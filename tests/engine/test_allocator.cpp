// The allocator: 64-byte alignment, current and peak bytes per device, peak reset,
// reuse of cached large blocks that are not counted as held, and the reserved bytes
// (blocks held from the C allocator, cached ones included) with their peak.
#include "engine/allocator.h"
#include "engine/tensor.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

TEST(Allocator, BlocksAreAlignedTo64Bytes) {
  for (size_t bytes : {1, 3, 64, 100, 4097, 3 << 20}) {
    void* p = allocate(Device::cpu(), bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << bytes;
    deallocate(Device::cpu(), p, bytes);
  }
}

TEST(Allocator, CurrentAndPeakFollowTensorsAndResetPeakStartsAPhase) {
  MemoryStats before = memory_stats(Device::cpu());
  reset_peak_memory(Device::cpu());
  {
    Tensor a({1000}, DType::F32, Device::cpu()), b({500}, DType::F32, Device::cpu());
    EXPECT_EQ(memory_stats(Device::cpu()).current_bytes, before.current_bytes + 6000);
  }
  MemoryStats after = memory_stats(Device::cpu());
  EXPECT_EQ(after.current_bytes, before.current_bytes);
  EXPECT_EQ(after.peak_bytes, before.current_bytes + 6000);
  reset_peak_memory(Device::cpu());
  EXPECT_EQ(memory_stats(Device::cpu()).peak_bytes, before.current_bytes);
}

TEST(Allocator, LargeFreedBlocksAreReusedAndNotCountedAsHeld) {
  release_cached_memory();
  const size_t bytes = 5 << 20;
  void* first = allocate(Device::cpu(), bytes);
  int64_t held = memory_stats(Device::cpu()).current_bytes;
  deallocate(Device::cpu(), first, bytes);
  EXPECT_EQ(memory_stats(Device::cpu()).current_bytes, held - int64_t(bytes));
  EXPECT_GE(memory_stats(Device::cpu()).cached_bytes, int64_t(bytes));
  void* second = allocate(Device::cpu(), bytes - 100);  // same 4 KiB-rounded size
  EXPECT_EQ(second, first);
  deallocate(Device::cpu(), second, bytes - 100);
  release_cached_memory();
  EXPECT_EQ(memory_stats(Device::cpu()).cached_bytes, 0);
}

// A fresh block raises the reserved bytes by its rounded size; freeing it into the cache
// keeps them (the process still holds the block); releasing the cache returns them.
TEST(Allocator, ReservedBytesCountBlocksHeldFromTheSystemCachedOnesIncluded) {
  release_cached_memory();
  const MemoryStats before = memory_stats(Device::cpu());
  EXPECT_GE(before.reserved_bytes, before.current_bytes);
  reset_peak_memory(Device::cpu());
  EXPECT_EQ(memory_stats(Device::cpu()).peak_reserved_bytes, before.reserved_bytes);
  const size_t bytes = (7 << 20) + 5;  // rounds up to 7 MiB + 4 KiB
  const int64_t rounded = (int64_t(7) << 20) + 4096;
  void* p = allocate(Device::cpu(), bytes);
  const MemoryStats during = memory_stats(Device::cpu());
  EXPECT_EQ(during.reserved_bytes, before.reserved_bytes + rounded);
  EXPECT_EQ(during.peak_reserved_bytes, before.reserved_bytes + rounded);
  EXPECT_EQ(during.current_bytes, before.current_bytes + int64_t(bytes)) << "requested bytes are not rounded";
  EXPECT_EQ(memory_stats(Device::emulated()).reserved_bytes, during.reserved_bytes) << "one host pool";
  deallocate(Device::cpu(), p, bytes);
  EXPECT_EQ(memory_stats(Device::cpu()).reserved_bytes, before.reserved_bytes + rounded) << "a cached block is held";
  release_cached_memory();
  const MemoryStats after = memory_stats(Device::cpu());
  EXPECT_EQ(after.reserved_bytes, before.reserved_bytes);
  EXPECT_EQ(after.peak_reserved_bytes, before.reserved_bytes + rounded);
  reset_peak_memory(Device::cpu());
  EXPECT_EQ(memory_stats(Device::cpu()).peak_reserved_bytes, after.reserved_bytes);
}

TEST(Allocator, CudaAllocationWithoutTheBackendIsAClearError) {
  try {
    allocate(Device::cuda(0), 16);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cuda:0"), std::string::npos);
  }
}

}  // namespace
}  // namespace vitune::testing
