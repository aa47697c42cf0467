// The recycling float buffer: reuse within a thread, moves, and buffers that end their
// life on another thread.
#include <gtest/gtest.h>

#include <thread>
#include <utility>

#include "data/float_buffer.h"

namespace vitune::data {
namespace {

// Sizes far above anything the other tests leave in this thread's pool.
constexpr size_t kLarge = size_t(3) << 20;

TEST(FloatBuffer, FreedMemoryIsHandedOutAgainForSizesItHolds) {
  const float* first = nullptr;
  {
    FloatBuffer buffer(kLarge);
    buffer[kLarge - 1] = 1.0f;
    first = buffer.data();
  }
  FloatBuffer smaller(kLarge - 100);
  EXPECT_EQ(smaller.data(), first);
  EXPECT_EQ(smaller.size(), kLarge - 100);
  FloatBuffer larger(kLarge + 100);  // the pool has nothing this large
  EXPECT_NE(larger.data(), first);
  EXPECT_EQ(larger.size(), kLarge + 100);
}

TEST(FloatBuffer, PoolKeepsAFewBuffers) {
  std::vector<const float*> freed;
  {
    std::vector<FloatBuffer> buffers;
    for (int i = 0; i < 6; ++i) buffers.emplace_back(100);
    for (const FloatBuffer& buffer : buffers) freed.push_back(buffer.data());
  }
  // Six freed, four kept: the last four freed.
  int reused = 0;
  std::vector<FloatBuffer> again;
  for (int i = 0; i < 6; ++i) {
    again.emplace_back(100);
    for (size_t k = 2; k < freed.size(); ++k) reused += again.back().data() == freed[k];
  }
  EXPECT_EQ(reused, 4);
}

TEST(FloatBuffer, MovesTransferOwnership) {
  FloatBuffer a(10);
  a[3] = 7.0f;
  const float* data = a.data();
  FloatBuffer b(std::move(a));
  EXPECT_EQ(b.data(), data);
  EXPECT_EQ(b[3], 7.0f);
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(a.size(), 0u);
  FloatBuffer c(5);
  c = std::move(b);
  EXPECT_EQ(c.data(), data);
  EXPECT_EQ(c.size(), 10u);
  EXPECT_EQ(FloatBuffer(0).data(), nullptr);
}

TEST(FloatBuffer, BuffersMayDieOnOtherThreads) {
  FloatBuffer made_here(50);
  std::thread([buffer = std::move(made_here)]() mutable {
    FloatBuffer local(20);
    local = std::move(buffer);  // the thread's own buffer goes to its pool, then at exit
  }).join();                    // both are freed, the pool with the thread
  FloatBuffer made_there;
  std::thread([&made_there] { made_there = FloatBuffer(30); }).join();
  made_there[29] = 1.0f;  // still valid after its thread ended
  EXPECT_EQ(made_there.size(), 30u);
}

}  // namespace
}  // namespace vitune::data
