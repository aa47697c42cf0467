// Index and label checks that do not wait for the device (engine/cuda/index_check.h):
// a bad index is reported, naming the op, the value and its position, when the host next
// waits for the device -- the loss's read-back for cross-entropy, any synchronize or
// copy to the host otherwise -- and only once; the op's outputs are left as they were;
// more checks than the ring holds are settled on the way; and with launch-synchronous
// checking (VITUNE_CUDA_SYNC=1) the bad call itself throws, and every op leaves the
// device idle.
#include <cstdlib>
#include <functional>
#include <string>

#include "engine/device_memory.h"
#include "engine/devices.h"
#include "engine/error.h"
#include "engine/ops.h"
#include "op_harness.h"

namespace vitune::testing {
namespace {

class CudaDeferredChecks : public CudaTest {
 protected:
  void TearDown() override { cuda::set_launch_sync(saved_sync_); }
  const bool saved_sync_ = cuda::launch_sync();
};

// Runs `work` and then waits for the device; expects one Error whose message holds every
// one of `needles`, and no error from a second wait.
void expect_reported(const std::string& what, const std::function<void()>& work,
                     std::initializer_list<const char*> needles) {
  try {
    work();
    synchronize(gpu());
    ADD_FAILURE() << what << ": no error";
  } catch (const Error& e) {
    const std::string message = e.what();
    for (const char* needle : needles) EXPECT_NE(message.find(needle), std::string::npos) << what << ": " << message;
  }
  EXPECT_NO_THROW(synchronize(gpu())) << what << ": reported twice";
}

TEST_F(CudaDeferredChecks, ABadIndexIsReportedAtTheNextWaitNamingOpValueAndPosition) {
  const Tensor x = uniform({100}, DType::F32, 960).to(gpu());
  const Tensor bad = index_tensor({3, 1, 250, 7, -4}).to(gpu());
  expect_reported("gather", [&] { ops::gather(x, bad); }, {"gather", "index 250", "position 2", "[0, 100)"});
  Tensor target = uniform({100}, DType::F32, 961).to(gpu());
  const Tensor before = target.to(Device::cpu());
  const Tensor values = uniform({5}, DType::F32, 962).to(gpu());
  expect_reported("scatter_add", [&] { ops::scatter_add(target, bad, values); }, {"scatter_add", "index 250"});
  EXPECT_TRUE(bitwise_equal(target.to(Device::cpu()), before)) << "a refused scatter_add wrote x";
}

TEST_F(CudaDeferredChecks, ABadLabelFailsTheLossItselfNamingTheRow) {
  const Tensor logits = uniform({4, 5}, DType::F32, 963).to(gpu());
  const Tensor labels = index_tensor({0, 4, 7, 1}).to(gpu());
  try {
    Tensor probs;
    ops::cross_entropy_forward(logits, labels, 0.1, probs);
    ADD_FAILURE() << "the loss of a bad label was returned";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("cross_entropy_forward: label 7 of row 2 is outside [0, 5)"), std::string::npos) << message;
  }
  expect_reported("cross_entropy_backward", [&] { ops::cross_entropy_backward(logits, labels, 0.1, 1.0); },
                  {"cross_entropy_backward", "label 7 of row 2"});
}

TEST_F(CudaDeferredChecks, AnUnsortedSelectionNamesBothIndices) {
  const Tensor dy = uniform({5, 3}, DType::F32, 964).to(gpu()), x = uniform({5, 4}, DType::F32, 965).to(gpu());
  Tensor accumulate = uniform({3}, DType::F32, 966).to(gpu());
  const Tensor before = accumulate.to(Device::cpu());
  expect_reported("masked_weight_grad",
                  [&] { ops::masked_weight_grad(dy, x, index_tensor({2, 9, 5}).to(gpu()), 4, accumulate); },
                  {"masked_weight_grad", "sorted and unique", "position 2 holds 5 after 9"});
  EXPECT_TRUE(bitwise_equal(accumulate.to(Device::cpu()), before)) << "a refused masked_weight_grad accumulated";
}

// 300 checks without a wait: the ring of 256 is settled on the way, the bad one among the
// first is still reported, and good ones report nothing.
TEST_F(CudaDeferredChecks, MoreChecksThanTheRingHoldsAreSettledInOrder) {
  const Tensor x = uniform({50}, DType::F32, 967).to(gpu());
  const Tensor good = index_tensor({0, 49, 7}).to(gpu()), bad = index_tensor({0, 50}).to(gpu());
  for (int i = 0; i < 300; ++i) ops::gather(x, good);
  EXPECT_NO_THROW(synchronize(gpu()));
  expect_reported("a bad gather among 300 good ones",
                  [&] {
                    for (int i = 0; i < 300; ++i) ops::gather(x, i == 3 ? bad : good);
                  },
                  {"gather", "index 50", "position 1"});
}

TEST_F(CudaDeferredChecks, UnderLaunchSyncTheBadCallItselfThrows) {
  cuda::set_launch_sync(true);
  const Tensor x = uniform({10}, DType::F32, 968).to(gpu());
  EXPECT_THROW(ops::gather(x, index_tensor({10}).to(gpu())), Error);
  EXPECT_NO_THROW(synchronize(gpu()));
}

// Under launch-synchronous checking every op returns with the device idle: the next
// failure is pinned on the op that caused it. The CUDA test run sets VITUNE_CUDA_SYNC=1,
// and then launch_sync() must say so.
TEST_F(CudaDeferredChecks, LaunchSyncLeavesTheDeviceIdleAfterEveryOp) {
  if (const char* env = std::getenv("VITUNE_CUDA_SYNC")) {
    EXPECT_EQ(saved_sync_, std::string(env) == "1") << "VITUNE_CUDA_SYNC=" << env;
  }
  cuda::set_launch_sync(true);
  const Tensor a = Tensor::zeros({2048, 2048}, DType::F64, gpu());
  Tensor c({2048, 2048}, DType::F64, gpu());
  ops::gemm(false, false, 1.0, a, a, 0.0, c);
  EXPECT_TRUE(cuda::idle(0)) << "gemm";
  const Tensor host = uniform({1 << 20}, DType::F32, 969);
  const Tensor copied = host.to(gpu());
  EXPECT_TRUE(cuda::idle(0)) << "a copy from the host";
  Tensor probs;
  ops::attention_forward(uniform({2, 17, 24}, DType::F32, 970).to(gpu()), 2, probs);
  EXPECT_TRUE(cuda::idle(0)) << "attention_forward";
}

}  // namespace
}  // namespace vitune::testing
