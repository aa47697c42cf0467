// Same inputs give the same bits whatever the number of threads: the forward pass, the
// loss and every gradient of a ViT, with 1 and with 2 threads.
#include "engine/random.h"
#include "nn/vit.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

struct StepResult {
  Tensor logits;
  std::vector<Tensor> grads;
};

StepResult train_step_with_threads(int threads) {
  ThreadCount scope(threads);
  nn::VitConfig config;
  config.img_size = 28;
  config.patch = 4;
  config.in_chans = 1;
  config.dim = 64;
  config.depth = 2;
  config.heads = 4;
  config.num_classes = 5;
  nn::VisionTransformer model(config, Device::cpu());
  model.init_weights(3407);
  Tensor images({16, 1, 28, 28}, DType::F32, Device::cpu());
  fill_normal(images, 1, 0, 0.0, 1.0);
  std::vector<int64_t> labels(16);
  for (int i = 0; i < 16; ++i) labels[size_t(i)] = i % 5;
  autograd::Variable logits = model.forward(autograd::Variable(images));
  autograd::backward(autograd::cross_entropy(logits, Tensor::from_vector<int64_t>({16}, labels, Device::cpu()), 0.1));
  StepResult run{logits.value(), {}};
  for (nn::Parameter* p : model.parameters()) run.grads.push_back(p->grad());
  return run;
}

TEST(Determinism, OneAndTwoThreadsGiveIdenticalBits) {
  StepResult one = train_step_with_threads(1);
  StepResult two = train_step_with_threads(2);
  EXPECT_TRUE(bitwise_equal(one.logits, two.logits));
  ASSERT_EQ(one.grads.size(), two.grads.size());
  for (size_t i = 0; i < one.grads.size(); ++i) EXPECT_TRUE(bitwise_equal(one.grads[i], two.grads[i])) << i;
}

}  // namespace
}  // namespace vitune::testing
