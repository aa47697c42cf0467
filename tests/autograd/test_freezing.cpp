// A backward computes only the gradients somebody needs, on every device: frozen weights
// skip their product, the walk stops below the earliest trainable parameter,
// element-masked weights get exactly the selected entries of the dense gradient, and
// no_grad records nothing. Skipped products are proven with the engine's FLOP counter.
#include "autograd/functions.h"
#include "engine/flop_counter.h"
#include "engine/ops.h"
#include "device_test.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

using autograd::Variable;
namespace ag = autograd;

constexpr int64_t kTokens = 6, kWidth = 8;

// The seed of this suite's random tensors.
constexpr uint64_t kSeed = 7;

// Three linear layers and a loss, on `device`.
struct Chain {
  explicit Chain(Device device) : device(device) {}
  Device device;
  Variable x{random_normal({kTokens, kWidth}, DType::F32, kSeed, 1).to(device)};
  Variable w1{random_normal({kWidth, kWidth}, DType::F32, kSeed, 2).to(device), true, "w1"};
  Variable w2{random_normal({kWidth, kWidth}, DType::F32, kSeed, 3).to(device), true, "w2"};
  Variable w3{random_normal({kWidth, kWidth}, DType::F32, kSeed, 4).to(device), true, "w3"};
  Variable forward() const {
    Variable h = ag::linear(ag::linear(ag::linear(x, w1, Variable()), w2, Variable()), w3, Variable());
    return ag::cross_entropy(h, Tensor::from_vector<int64_t>({kTokens}, {0, 1, 2, 3, 4, 5}, device));
  }
  // FLOPs of the backward pass alone.
  int64_t backward_flops() const {
    Variable loss = forward();
    reset_flop_counter();
    ag::backward(loss);
    return flops_counted();
  }
};

constexpr int64_t kProduct = 2 * kTokens * kWidth * kWidth;  // one [T,W] x [W,W] GEMM

class Freezing : public OnDevice {};

TEST_P(Freezing, AllTrainableRunsEveryProductButTheInputGradient) {
  Chain c(device());
  // dW for three layers, dX for the top two (x itself needs no gradient).
  EXPECT_EQ(c.backward_flops(), 5 * kProduct);
}

TEST_P(Freezing, FrozenMiddleWeightSkipsItsProductButPropagates) {
  Chain c(device());
  c.w2.set_requires_grad(false);
  EXPECT_EQ(c.backward_flops(), 4 * kProduct);
  EXPECT_FALSE(c.w2.grad().defined());
  EXPECT_TRUE(c.w1.grad().defined());
}

TEST_P(Freezing, BackwardStopsBelowTheEarliestTrainableParameter) {
  Chain c(device());
  c.w1.set_requires_grad(false);
  c.w3.set_requires_grad(false);
  // w3: only dX (to reach w2); w2: only dW; w1: nothing at all.
  EXPECT_EQ(c.backward_flops(), 2 * kProduct);
  EXPECT_TRUE(c.w2.grad().defined());
  EXPECT_FALSE(c.w1.grad().defined());
  EXPECT_FALSE(c.w3.grad().defined());
}

TEST_P(Freezing, NothingTrainableRecordsNoTape) {
  Chain c(device());
  for (const Variable* w : {&c.w1, &c.w2, &c.w3}) w->impl()->requires_grad = false;
  Variable loss = c.forward();
  EXPECT_FALSE(loss.requires_grad());
  EXPECT_THROW(ag::backward(loss), Error);
}

TEST_P(Freezing, NoGradScopeRecordsNothing) {
  Chain c(device());
  ag::NoGradGuard guard;
  EXPECT_FALSE(c.forward().requires_grad());
}

TEST_P(Freezing, MaskedWeightGetsExactlyTheSelectedEntriesOfTheDenseGradient) {
  Chain dense(device());
  dense.forward();
  ag::backward(dense.forward());
  Tensor full = dense.w2.grad();

  Chain masked(device());
  Tensor indices = Tensor::from_vector<int64_t>({4}, {0, 9, 10, 63}, device());
  masked.w2.set_grad_indices(indices);
  int64_t flops = masked.backward_flops();
  ASSERT_EQ(masked.w2.grad().shape(), Shape({4}));
  EXPECT_TRUE(tensors_close(masked.w2.grad(), ops::gather(full, indices), {1e-6, 1e-5}, "masked w2"));
  // The dense [W, W] weight product of w2 is not run: only 2 T per selected entry.
  EXPECT_EQ(flops, 4 * kProduct + 2 * kTokens * 4);
}

TEST_P(Freezing, LeafGradientsAccumulateAcrossBackwardPasses) {
  Chain c(device());
  ag::backward(c.forward());
  Tensor once = c.w3.grad().clone();
  ag::backward(c.forward());
  EXPECT_TRUE(tensors_close(c.w3.grad(), ops::scale(once, 2.0), {1e-6, 1e-6}, "twice"));
}

VITUNE_ON_EVERY_DEVICE(Freezing);

}  // namespace
}  // namespace vitune::testing
