// Uploads (engine/upload.h) where no GPU is involved: to the cpu the tensor itself, to
// the emulated device a copy with the same bits; take() hands the tensor over once; an
// undefined tensor stays undefined. tests/cuda/test_cuda_transfers.cpp covers the GPU.
#include <gtest/gtest.h>

#include "engine/upload.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

TEST(Upload, OnHostDevicesIsAnOrdinaryCopy) {
  const Tensor host = uniform_tensor<float>({3, 4}, 31, -1, 1);
  Upload to_cpu(host, Device::cpu());
  EXPECT_TRUE(to_cpu.take().same_storage(host));
  Upload to_emulated(host, Device::emulated());
  const Tensor there = to_emulated.take();
  EXPECT_EQ(there.device(), Device::emulated());
  EXPECT_FALSE(there.same_storage(host));
  EXPECT_TRUE(bitwise_equal(there.to(Device::cpu()), host));
  EXPECT_FALSE(to_emulated.take().defined()) << "take() hands the tensor over once";
  EXPECT_FALSE(Upload(Tensor(), Device::emulated()).take().defined());
  Upload first(host, Device::emulated());
  Upload second = std::move(first);
  EXPECT_TRUE(bitwise_equal(second.take().to(Device::cpu()), host));
  EXPECT_FALSE(first.take().defined());  // NOLINT(bugprone-use-after-move): a moved-from upload is empty
}

}  // namespace
}  // namespace vitune::testing
