// Optimizers and the freeze state: AdamW and SGD on an element-masked parameter equal
// the dense update restricted to the selected entries, and keep state only for them;
// exported state resumes bit-exactly.
#include "engine/ops.h"
#include "engine/random.h"
#include "nn/optimizer.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

Tensor fixed_gradient(int64_t n, uint64_t stream) {
  Tensor g({n}, DType::F32, Device::cpu());
  fill_normal(g, 11, stream, 0.0, 1.0);
  return g;
}

Tensor start_value(int64_t n) {
  Tensor v({n}, DType::F32, Device::cpu());
  fill_normal(v, 12, 0, 0.0, 1.0);
  return v;
}

// Three steps with the gradient sequence g_s restricted to the parameter's entries.
template <typename MakeOptimizer>
Tensor three_steps(nn::Parameter& p, const MakeOptimizer& make) {
  auto optimizer = make(std::vector<nn::Parameter*>{&p});
  for (uint64_t s = 0; s < 3; ++s) {
    Tensor g = fixed_gradient(p.numel(), s);
    autograd::accumulate_grad(p.var(), g);
    optimizer->step();
    optimizer->zero_grad();
  }
  return p.value();
}

template <typename MakeOptimizer>
void expect_masked_equals_dense_restricted(const MakeOptimizer& make) {
  const int64_t n = 50;
  Tensor indices = Tensor::from_vector<int64_t>({4}, {1, 7, 30, 49}, Device::cpu());
  nn::Parameter dense("w", start_value(n));
  nn::Parameter masked("w", start_value(n));
  masked.train_entries(indices);
  Tensor dense_after = three_steps(dense, make);
  Tensor masked_after = three_steps(masked, make);
  std::vector<bool> selected(size_t(n), false);
  for (int64_t i : indices.to_vector<int64_t>()) selected[size_t(i)] = true;
  Tensor start = start_value(n);
  for (int64_t i = 0; i < n; ++i) {
    float expected = selected[size_t(i)] ? dense_after.data<float>()[i] : start.data<float>()[i];
    EXPECT_EQ(masked_after.data<float>()[i], expected) << "entry " << i;
  }
}

TEST(OptimizerMasks, MaskedAdamWEqualsDenseAdamWOnTheSelectedEntries) {
  expect_masked_equals_dense_restricted(
      [](std::vector<nn::Parameter*> p) { return std::make_unique<nn::AdamW>(p, nn::AdamWOptions{1e-2, 0.9, 0.999, 1e-8, 0.05}); });
}

TEST(OptimizerMasks, MaskedSgdEqualsDenseSgdOnTheSelectedEntries) {
  expect_masked_equals_dense_restricted(
      [](std::vector<nn::Parameter*> p) { return std::make_unique<nn::Sgd>(p, nn::SgdOptions{0.1, 0.9, 1e-3, true}); });
}

TEST(OptimizerMasks, StateGrowsWithTheSelectionAndFrozenParametersHaveNone) {
  nn::Parameter masked("a", start_value(1000));
  masked.train_entries(Tensor::from_vector<int64_t>({3}, {0, 500, 999}, Device::cpu()));
  nn::Parameter frozen("b", start_value(1000));
  frozen.freeze();
  nn::AdamW adamw({&masked, &frozen}, {});
  autograd::accumulate_grad(masked.var(), fixed_gradient(1000, 0));
  adamw.step();
  EXPECT_EQ(adamw.state_bytes(), 2 * 3 * 4);  // two moments of three floats
}

TEST(OptimizerState, ExportedStateResumesBitExactly) {
  auto make = [](nn::Parameter& p) { return std::make_unique<nn::AdamW>(std::vector<nn::Parameter*>{&p}, nn::AdamWOptions{}); };
  nn::Parameter straight("w", start_value(20));
  auto straight_optimizer = make(straight);
  nn::Parameter resumed("w", start_value(20));
  auto first = make(resumed);
  std::vector<std::pair<std::string, Tensor>> saved;
  for (uint64_t s = 0; s < 4; ++s) {
    autograd::accumulate_grad(straight.var(), fixed_gradient(20, s));
    straight_optimizer->step();
    straight_optimizer->zero_grad();
    if (s < 2) {
      autograd::accumulate_grad(resumed.var(), fixed_gradient(20, s));
      first->step();
      first->zero_grad();
    }
  }
  first->export_state("optim.", saved);
  std::map<std::string, Tensor> by_name(saved.begin(), saved.end());
  auto second = make(resumed);
  second->import_state("optim.", by_name, "test");
  for (uint64_t s = 2; s < 4; ++s) {
    autograd::accumulate_grad(resumed.var(), fixed_gradient(20, s));
    second->step();
    second->zero_grad();
  }
  EXPECT_TRUE(bitwise_equal(resumed.value(), straight.value()));
}

TEST(OptimizerState, MismatchedStateIsAClearError) {
  nn::Parameter p("w", start_value(20));
  nn::AdamW adamw({&p}, {});
  std::map<std::string, Tensor> bad = {{"optim.w.steps", Tensor::from_vector<int64_t>({1}, {3}, Device::cpu())},
                                       {"optim.w.slot0", Tensor::zeros({19}, DType::F32, Device::cpu())}};
  EXPECT_THROW(adamw.import_state("optim.", bad, "ckpt"), Error);
}

}  // namespace
}  // namespace vitune::testing
