// A small ViT trained one step on the GPU (forward, label-smoothed cross-entropy,
// backward, one SGD step with momentum and weight decay; one weight trainable at a
// quarter of its entries, so the masked gradient and update run too): twice from the
// same seed it gives the same bits, and its logits, loss, gradients and updated weights
// match the same step on the host within the golden tests' tolerances.
#include <vector>

#include "engine/random.h"
#include "nn/optimizer.h"
#include "nn/vit.h"
#include "op_harness.h"
#include "small_vit.h"

namespace vitune::testing {
namespace {

class CudaDeterminism : public CudaTest {};

// What one step produced, copied to the host.
struct StepResult {
  Tensor logits;
  double loss = 0;
  std::vector<Tensor> grads;   // per parameter, in the model's order
  std::vector<Tensor> values;  // per parameter, after the SGD step
};

StepResult one_step(Device device) {
  nn::VisionTransformer model(small_vit_config(3, 32, 2), Device::cpu());
  model.init_weights(3407);
  nn::Parameter& fc1 = model.parameter("blocks.0.mlp.fc1.weight");
  fc1.train_entries(sorted_selection(fc1.numel(), 0.25, 1));
  model.to(device);
  for (nn::Parameter* p : model.parameters()) EXPECT_EQ(p->value().device(), device) << p->name();

  Tensor images({6, 3, 8, 8}, DType::F32, Device::cpu());
  fill_normal(images, 11, 0, 0.0, 1.0);
  std::vector<int64_t> labels(6);
  for (int64_t i = 0; i < 6; ++i) labels[size_t(i)] = i % 3;
  autograd::Variable logits = model.forward(autograd::Variable(images.to(device)));
  EXPECT_EQ(logits.value().device(), device);
  autograd::Variable loss = autograd::cross_entropy(logits, Tensor::from_vector<int64_t>({6}, labels, Device::cpu()).to(device), 0.1);
  autograd::backward(loss);

  StepResult result;
  result.logits = logits.value().to(Device::cpu());
  result.loss = loss.value().item(0);
  for (nn::Parameter* p : model.parameters()) result.grads.push_back(p->grad().to(Device::cpu()));
  nn::SgdOptions options;
  options.lr = 0.05;
  options.momentum = 0.9;
  options.weight_decay = 1e-4;
  nn::Sgd sgd(model.parameters(), options);
  sgd.step();
  for (nn::Parameter* p : model.parameters()) result.values.push_back(p->value().to(Device::cpu()));
  return result;
}

// Both undefined, or the same shape, dtype and bytes.
bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  return !a.defined() || bitwise_equal(a, b);
}

TEST_F(CudaDeterminism, TwoRunsFromTheSameSeedGiveIdenticalBits) {
  StepResult first = one_step(gpu());
  StepResult second = one_step(gpu());
  EXPECT_TRUE(same_bits(first.logits, second.logits));
  EXPECT_EQ(first.loss, second.loss);
  ASSERT_EQ(first.grads.size(), second.grads.size());
  for (size_t i = 0; i < first.grads.size(); ++i) {
    EXPECT_TRUE(same_bits(first.grads[i], second.grads[i])) << "gradient of parameter " << i;
    EXPECT_TRUE(same_bits(first.values[i], second.values[i])) << "value of parameter " << i << " after the step";
  }
}

TEST_F(CudaDeterminism, TheStepMatchesTheHostStep) {
  StepResult host = one_step(Device::cpu());
  StepResult device = one_step(gpu());
  EXPECT_TRUE(tensors_close(device.logits, host.logits, kF32Forward, "logits"));
  EXPECT_NEAR(device.loss, host.loss, kF32Forward.abs + kF32Forward.rel * host.loss);
  ASSERT_EQ(device.grads.size(), host.grads.size());
  for (size_t i = 0; i < host.grads.size(); ++i) {
    ASSERT_EQ(device.grads[i].defined(), host.grads[i].defined()) << "gradient of parameter " << i;
    if (host.grads[i].defined()) {
      EXPECT_TRUE(tensors_close(device.grads[i], host.grads[i], kF32Gradient, cat("gradient of parameter ", i)));
    }
    EXPECT_TRUE(tensors_close(device.values[i], host.values[i], kF32Forward, cat("parameter ", i, " after the step")));
  }
}

}  // namespace
}  // namespace vitune::testing
