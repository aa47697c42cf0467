// The host memory limit: a request that would take the bytes held by tensors past
// host_memory_limit() fails with a clear error before anything is allocated, and the
// bytes held are unchanged by the failure; requests near SIZE_MAX cannot wrap around.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "engine/allocator.h"
#include "engine/error.h"
#include "engine/tensor.h"

namespace vitune::testing {
namespace {

// Sets the limit for one test and puts the default back.
struct ScopedHostLimit {
  explicit ScopedHostLimit(size_t bytes) { set_host_memory_limit(bytes); }
  ~ScopedHostLimit() { set_host_memory_limit(0); }
};

TEST(HostMemoryLimit, DefaultsToThePhysicalMemoryOrTheEnvironment) {
  EXPECT_GT(host_memory_limit(), size_t(64) << 20);
}

TEST(HostMemoryLimit, ARequestPastTheLimitFailsClearly) {
  const int64_t held_before = memory_stats(Device::cpu()).current_bytes;
  ScopedHostLimit limit(size_t(held_before) + (size_t(4) << 20));
  Tensor fits({1 << 18}, DType::F32, Device::cpu());  // 1 MiB
  try {
    Tensor too_big({1 << 20}, DType::F32, Device::cpu());  // 4 MiB more
    FAIL() << "expected the allocation to be refused";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("cannot allocate 4194304 bytes (4 MiB) of host memory"), std::string::npos) << message;
    EXPECT_NE(message.find("the limit is"), std::string::npos) << message;
  }
  EXPECT_EQ(memory_stats(Device::cpu()).current_bytes, held_before + (int64_t(1) << 20));
}

TEST(HostMemoryLimit, HugeRequestsDoNotWrapAround) {
  for (size_t bytes : {SIZE_MAX, SIZE_MAX - 63, SIZE_MAX / 2}) {
    EXPECT_THROW(allocate(Device::cpu(), bytes), Error) << bytes;
  }
}

}  // namespace
}  // namespace vitune::testing
