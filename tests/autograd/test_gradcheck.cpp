// Float64 finite-difference checks of every differentiable function of the tape.
#include "gradcheck.h"

namespace vitune::testing {
namespace {

using autograd::Variable;
namespace ag = autograd;

Variable input(const Shape& shape, uint64_t stream, double stddev = 1.0) {
  return Variable(random_normal(shape, DType::F64, kGradcheckSeed, stream, 0.0, stddev), true);
}

TEST(GradCheck, Linear) {
  expect_gradients_match([](auto& in) { return ag::linear(in[0], in[1], in[2]); },
                         {input({2, 3, 5}, 1), input({4, 5}, 2), input({4}, 3)});
}

TEST(GradCheck, LinearWithConvKernelWeight) {
  expect_gradients_match([](auto& in) { return ag::linear(in[0], in[1], in[2]); },
                         {input({2, 12}, 4), input({3, 3, 2, 2}, 5), input({3}, 6)});
}

TEST(GradCheck, LinearWithoutBias) {
  expect_gradients_match([](auto& in) { return ag::linear(in[0], in[1], Variable()); },
                         {input({3, 5}, 7), input({2, 5}, 8)});
}

// Every input trainable, so the frozen-weight shortcut is checked apart from the rest
// (tests/nn/test_lora.cpp checks the adapter alone with W and b frozen).
TEST(GradCheck, LoraLinear) {
  expect_gradients_match([](auto& in) { return ag::lora_linear(in[0], in[1], in[2], in[3], in[4], 1.5); },
                         {input({2, 3, 5}, 20), input({4, 5}, 21), input({4}, 22), input({3, 5}, 23),
                          input({4, 3}, 24)});
}

TEST(GradCheck, LoraLinearFrozenBaseWithoutBias) {
  Variable frozen(random_normal({4, 5}, DType::F64, kGradcheckSeed, 25), false);
  expect_gradients_match([&](auto& in) { return ag::lora_linear(in[0], frozen, Variable(), in[1], in[2], 0.5); },
                         {input({3, 5}, 26), input({2, 5}, 27), input({4, 2}, 28)});
  EXPECT_FALSE(frozen.grad().defined());
}

TEST(GradCheck, LayerNorm) {
  expect_gradients_match([](auto& in) { return ag::layer_norm(in[0], in[1], in[2], 1e-5); },
                         {input({2, 3, 6}, 9), input({6}, 10), input({6}, 11)});
}

TEST(GradCheck, Gelu) {
  expect_gradients_match([](auto& in) { return ag::gelu(in[0]); }, {input({3, 7}, 12, 2.0)});
}

TEST(GradCheck, QuickGelu) {
  expect_gradients_match([](auto& in) { return ag::quick_gelu(in[0]); }, {input({3, 7}, 40, 3.0)});
}

TEST(GradCheck, MulChannels) {
  expect_gradients_match([](auto& in) { return ag::mul_channels(in[0], in[1]); },
                         {input({2, 3, 5}, 41), input({5}, 42)});
}

TEST(GradCheck, MeanTokens) {
  for (int64_t first : {0, 2}) {
    expect_gradients_match([first](auto& in) { return ag::mean_tokens(in[0], first); }, {input({2, 5, 3}, 43)});
  }
}

TEST(GradCheck, Softmax) {
  expect_gradients_match([](auto& in) { return ag::softmax(in[0]); }, {input({4, 6}, 13, 2.0)});
}

TEST(GradCheck, Attention) {
  expect_gradients_match([](auto& in) { return ag::attention(in[0], 2); }, {input({2, 5, 12}, 14)});
}

TEST(GradCheck, CrossEntropyWithLabelSmoothing) {
  Tensor labels = Tensor::from_vector<int64_t>({4}, {2, 0, 4, 4}, Device::cpu());
  for (double smoothing : {0.0, 0.1}) {
    expect_gradients_match([&](auto& in) { return ag::cross_entropy(in[0], labels, smoothing); },
                           {input({4, 5}, 15, 2.0)});
  }
}

TEST(GradCheck, AddAndScale) {
  expect_gradients_match([](auto& in) { return ag::scale(ag::add(in[0], in[1]), -1.5); },
                         {input({3, 4}, 16), input({3, 4}, 17)});
}

TEST(GradCheck, AddBroadcastBatch) {
  expect_gradients_match([](auto& in) { return ag::add_broadcast_batch(in[0], in[1]); },
                         {input({3, 2, 4}, 18), input({1, 2, 4}, 19)});
}

TEST(GradCheck, MatmulTwoAndThreeDimensional) {
  expect_gradients_match([](auto& in) { return ag::matmul(in[0], in[1]); },
                         {input({3, 4}, 20), input({4, 2}, 21)});
  expect_gradients_match([](auto& in) { return ag::matmul(in[0], in[1]); },
                         {input({2, 3, 4}, 22), input({2, 4, 5}, 23)});
}

TEST(GradCheck, ReshapeAndTokens) {
  expect_gradients_match(
      [](auto& in) {
        Variable seq = ag::reshape(in[1], {2, 3, 4});
        return ag::select_token(ag::prepend_token(in[0], seq), 2);
      },
      {input({1, 1, 4}, 24), input({6, 4}, 25)});
  expect_gradients_match([](auto& in) { return ag::select_token(ag::prepend_token(in[0], in[1]), 0); },
                         {input({1, 1, 4}, 26), input({2, 3, 4}, 27)});
}

TEST(GradCheck, PlaceToken) {
  expect_gradients_match([](auto& in) { return ag::place_token(in[0], 3, 1); }, {input({2, 4}, 60)});
}

// timm's qk_norm (LayerNorm over each head's entries of q and of k, v untouched) into
// the attention: every input of the path at once, 2 heads of 4 dims.
TEST(GradCheck, QkLayerNormThroughAttention) {
  expect_gradients_match(
      [](auto& in) { return ag::attention(ag::qk_layer_norm(in[0], 2, in[1], in[2], in[3], in[4], 1e-6), 2); },
      {input({2, 3, 24}, 61), input({4}, 62), input({4}, 63), input({4}, 64), input({4}, 65)});
}

TEST(GradCheck, Patchify) {
  expect_gradients_match([](auto& in) { return ag::patchify(in[0], 2); }, {input({2, 3, 4, 6}, 28)});
}

TEST(GradCheck, SharedInputAccumulatesOverUses) {
  // x feeds two branches: its gradient must be the sum of both.
  expect_gradients_match(
      [](auto& in) { return ag::add(ag::gelu(in[0]), ag::linear(in[0], in[1], Variable())); },
      {input({3, 4}, 29), input({4, 4}, 30)});
}

}  // namespace
}  // namespace vitune::testing
