// What the tape keeps of the values it computed, on every device: a value is released
// with its last handle unless a backward captured it (leaves never are); under bf16
// autocast linear keeps its input as bf16, half the bytes (measured with the
// allocator's live bytes), or nothing for a frozen weight; an element-masked weight
// keeps only the columns of its input that its selection reads, with the same gradient
// bits; and the gradients keep the bits of the autocast products on f32 inputs, masked
// and LoRA weights included.
#include "autograd/functions.h"
#include "engine/allocator.h"
#include "engine/autocast.h"
#include "engine/ops.h"
#include "device_test.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

using autograd::Variable;
namespace ag = autograd;

// Multiples of 16, so that every tensor's bytes are a whole number of allocator units.
constexpr int64_t kTokens = 32, kIn = 48, kOut = 16;
constexpr uint64_t kSeed = 31;

class SavedValues : public OnDevice {
 protected:
  Tensor random(Shape shape, uint64_t stream) const {
    return random_normal(std::move(shape), DType::F32, kSeed, stream).to(device());
  }
  int64_t live_bytes() const { return memory_stats(device()).current_bytes; }
};

TEST_P(SavedValues, AValueOnTheTapeIsReleasedWithItsLastHandleAndBackwardStillWorks) {
  Variable x(random({kTokens, kIn}, 1), true, "x");
  Variable w(random({kOut, kIn}, 2), true, "w");
  const Tensor seed = random({kTokens, kOut}, 3);

  Variable kept_h = ag::gelu(x);
  ag::backward(ag::linear(kept_h, w, Variable()), seed);
  const Tensor dx_kept = x.grad().clone(), dw_kept = w.grad().clone();
  x.zero_grad();
  w.zero_grad();

  Variable h = ag::gelu(x);
  const Variable h_on_tape = h.on_tape();
  Variable y = ag::linear(h, w, Variable());
  EXPECT_TRUE(h_on_tape.value().defined());
  h = Variable();
  EXPECT_FALSE(h_on_tape.value().defined()) << "the tape kept the value of gelu's output";
  ag::backward(y, seed);
  EXPECT_TRUE(bitwise_equal(x.grad(), dx_kept));
  EXPECT_TRUE(bitwise_equal(w.grad(), dw_kept));

  // A leaf keeps its value: it is a parameter or an input.
  Variable leaf(random({kTokens, kIn}, 4), true, "leaf");
  const Variable leaf_on_tape = leaf.on_tape();
  leaf = Variable();
  EXPECT_TRUE(leaf_on_tape.value().defined());
}

// The bytes that stay live after linear(gelu(x), w) once the forward pass has dropped
// gelu's output h: the output y plus what linear keeps of h.
int64_t bytes_kept_by_linear(const Variable& x, const Variable& w, bool autocast, Device device) {
  AutocastBf16Scope scope(autocast);
  const int64_t before = memory_stats(device).current_bytes;
  Variable y = ag::linear(ag::gelu(x), w, Variable());
  return memory_stats(device).current_bytes - before;
}

TEST_P(SavedValues, UnderAutocastLinearKeepsItsInputInHalfTheBytesAndAFrozenWeightKeepsNone) {
  Variable x(random({kTokens, kIn}, 1), true, "x");
  Variable w(random({kOut, kIn}, 2), true, "w");
  const int64_t y_bytes = kTokens * kOut * 4, h_bytes = kTokens * kIn * 4;
  EXPECT_EQ(bytes_kept_by_linear(x, w, false, device()), y_bytes + h_bytes);
  EXPECT_EQ(bytes_kept_by_linear(x, w, true, device()), y_bytes + h_bytes / 2);
  w.set_requires_grad(false);
  EXPECT_EQ(bytes_kept_by_linear(x, w, false, device()), y_bytes);
  EXPECT_EQ(bytes_kept_by_linear(x, w, true, device()), y_bytes);
}

TEST_P(SavedValues, AMaskedWeightKeepsOnlyTheInputColumnsItsSelectionReads) {
  Variable x(random({kTokens, kIn}, 1), true, "x");
  Variable w(random({kOut, kIn}, 2), true, "w");
  const Tensor seed = random({kTokens, kOut}, 3);
  // Entries (0, 47), (2, 5), (2, 47), (15, 0): columns 0, 5 and 47 of 48.
  const std::vector<int64_t> selection = {47, 2 * kIn + 5, 2 * kIn + 47, 15 * kIn};
  w.set_grad_indices(Tensor::from_vector<int64_t>({4}, selection, device()));
  EXPECT_EQ(w.grad_columns().device(), device());
  EXPECT_EQ(w.grad_columns().to(Device::cpu()).to_vector<int64_t>(), (std::vector<int64_t>{0, 5, 47}));
  EXPECT_EQ(w.grad_indices_in_columns().to(Device::cpu()).to_vector<int64_t>(),
            (std::vector<int64_t>{2, 2 * 3 + 1, 2 * 3 + 2, 15 * 3}));
  const int64_t y_bytes = kTokens * kOut * 4;
  EXPECT_EQ(bytes_kept_by_linear(x, w, false, device()), y_bytes + kTokens * 3 * 4) << "three columns of 48";

  // The same products in the same order as on all of x, so the same bits.
  ag::backward(ag::linear(ag::gelu(x), w, Variable()), seed);
  Tensor selected = Tensor::zeros({4}, DType::F32, device());
  const Tensor h = ag::gelu(Variable(x.value())).value();
  ops::masked_weight_grad(seed, h, w.grad_indices(), kIn, selected);
  EXPECT_TRUE(bitwise_equal(w.grad(), selected));

  // A selection that changes between the forward pass and backward is refused, even one
  // touching as many columns (1, 2 and 3): the kept columns are the old selection's.
  Variable y = ag::linear(x, w, Variable());
  w.set_grad_indices(Tensor::from_vector<int64_t>({3}, {1, 2, kIn + 3}, device()));
  EXPECT_THROW(ag::backward(y, seed), Error);

  // A selection that reads every column keeps x whole.
  std::vector<int64_t> diagonal;
  for (int64_t j = 0; j < kOut; ++j) {
    for (int64_t k = j * 3; k < j * 3 + 3; ++k) diagonal.push_back(j * kIn + k);
  }
  w.set_grad_indices(Tensor::from_vector<int64_t>({int64_t(diagonal.size())}, diagonal, device()));
  EXPECT_FALSE(w.grad_columns().defined());
  EXPECT_EQ(bytes_kept_by_linear(x, w, false, device()), y_bytes + kTokens * kIn * 4);
}

// A LoRA layer whose adapters are frozen and whose base weight is masked keeps the same
// columns, and its masked gradient reads them as linear's does.
TEST_P(SavedValues, AMaskedBaseWeightUnderFrozenLoraAdaptersGetsTheSameGradient) {
  constexpr int64_t kRank = 4;
  const Tensor xv = random({kTokens, kIn}, 1), seed = random({kTokens, kOut}, 3);
  Variable x(xv, false, "x");
  Variable w(random({kOut, kIn}, 2), true, "w");
  Variable a(random({kRank, kIn}, 6), false, "lora_A");
  Variable b(random({kOut, kRank}, 7), false, "lora_B");
  w.set_grad_indices(Tensor::from_vector<int64_t>({3}, {1, kIn + 2, 3 * kIn + 1}, device()));
  ASSERT_TRUE(w.grad_columns().defined());
  ag::backward(ag::lora_linear(x, w, Variable(), a, b, 0.5), seed);
  Tensor selected = Tensor::zeros({3}, DType::F32, device());
  ops::masked_weight_grad(seed, xv, w.grad_indices(), kIn, selected);
  EXPECT_TRUE(bitwise_equal(w.grad(), selected));
}

// dW = dY^T X as the autocast product of the f32 operands forms it.
Tensor autocast_weight_grad(const Tensor& dy, const Tensor& x, double alpha = 1.0) {
  Tensor dw = Tensor::like(x, {dy.dim(1), x.dim(1)});
  ops::gemm_bf16(true, false, alpha, dy, x, 0.0, dw);
  return dw;
}

TEST_P(SavedValues, AutocastGradientsKeepTheBitsOfTheProductsOnF32Inputs) {
  const Tensor xv = random({kTokens, kIn}, 1), seed = random({kTokens, kOut}, 3);
  Variable x(xv, true, "x");
  Variable w(random({kOut, kIn}, 2), true, "w");
  Variable b(random({kOut}, 5), true, "b");
  Variable y;
  {
    AutocastBf16Scope scope(true);
    y = ag::linear(x, w, b);
  }
  // Backward runs outside the scope: the weight gradient is still the autocast product.
  ag::backward(y, seed);
  EXPECT_TRUE(bitwise_equal(w.grad(), autocast_weight_grad(seed, xv)));
  Tensor dx = Tensor::like(xv, xv.shape());
  ops::gemm(false, false, 1.0, seed, w.value(), 0.0, dx);
  EXPECT_TRUE(bitwise_equal(x.grad(), dx));

  // An element-masked weight: its entries come from the f32 input, as without autocast.
  Variable masked(random({kOut, kIn}, 2), true, "masked");
  const Tensor indices = Tensor::from_vector<int64_t>({3}, {0, 50, kOut * kIn - 1}, Device::cpu());
  masked.set_grad_indices(indices);
  {
    AutocastBf16Scope scope(true);
    ag::backward(ag::linear(x, masked, Variable()), seed);
  }
  Tensor selected = Tensor::zeros({3}, DType::F32, device());
  ops::masked_weight_grad(seed, xv, masked.grad_indices(), kIn, selected);
  EXPECT_TRUE(bitwise_equal(masked.grad(), selected));
}

TEST_P(SavedValues, AutocastLoraGradientsKeepTheBitsOfTheProductsOnF32Inputs) {
  constexpr int64_t kRank = 4;
  constexpr double kScaling = 0.5;
  const Tensor xv = random({kTokens, kIn}, 1), seed = random({kTokens, kOut}, 3);
  Variable x(xv, false, "x");
  Variable w(random({kOut, kIn}, 2), false, "w");
  Variable a(random({kRank, kIn}, 6), true, "lora_A");
  Variable b(random({kOut, kRank}, 7), true, "lora_B");
  AutocastBf16Scope scope(true);
  ag::backward(ag::lora_linear(x, w, Variable(), a, b, kScaling), seed);
  // dA = s G^T X with G = dY B.
  Tensor g = Tensor::like(xv, {kTokens, kRank});
  ops::gemm(false, false, 1.0, seed, b.value(), 0.0, g);
  EXPECT_TRUE(bitwise_equal(a.grad(), autocast_weight_grad(g, xv, kScaling)));
}

VITUNE_ON_EVERY_DEVICE(SavedValues);

}  // namespace
}  // namespace vitune::testing
