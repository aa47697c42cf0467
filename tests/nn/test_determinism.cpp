// Same inputs give the same bits whatever the number of threads: the forward pass, the
// loss and every gradient of a ViT, with 1 and with 2 threads, trained in full and at a
// sparse selection (the masked weight-gradient path, over several token chunks).
#include <algorithm>
#include <string>
#include <vector>

#include "engine/random.h"
#include "nn/vit.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

struct StepResult {
  Tensor logits;
  std::vector<Tensor> grads;
};

// Every weight matrix trains at entries (j, (5 j) mod in) and (j, (5 j + 1) mod in) of
// each row j; everything else is frozen.
void train_sparsely(nn::VisionTransformer& model) {
  for (nn::Parameter* p : model.parameters()) {
    if (p->value().ndim() < 2 || p->name().find("weight") == std::string::npos) {
      p->freeze();
      continue;
    }
    const int64_t rows = p->shape()[0], cols = p->numel() / rows;
    std::vector<int64_t> indices;
    for (int64_t j = 0; j < rows; ++j) {
      int64_t a = j * cols + (5 * j) % cols, b = j * cols + (5 * j + 1) % cols;
      indices.push_back(std::min(a, b));
      indices.push_back(std::max(a, b));
    }
    p->train_entries(Tensor::from_vector<int64_t>({int64_t(indices.size())}, indices, Device::cpu()));
  }
}

StepResult train_step_with_threads(int threads, bool sparse) {
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
  if (sparse) train_sparsely(model);
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

void expect_identical(const StepResult& one, const StepResult& two) {
  EXPECT_TRUE(bitwise_equal(one.logits, two.logits));
  ASSERT_EQ(one.grads.size(), two.grads.size());
  for (size_t i = 0; i < one.grads.size(); ++i) {
    ASSERT_EQ(one.grads[i].defined(), two.grads[i].defined()) << i;
    if (one.grads[i].defined()) {
      EXPECT_TRUE(bitwise_equal(one.grads[i], two.grads[i])) << i;
    }
  }
}

TEST(Determinism, OneAndTwoThreadsGiveIdenticalBits) {
  expect_identical(train_step_with_threads(1, false), train_step_with_threads(2, false));
}

// 16 images of 50 tokens: 800 rows, more than one chunk of the masked gradient's sums.
TEST(Determinism, OneAndTwoThreadsGiveIdenticalBitsForASparseStep) {
  StepResult one = train_step_with_threads(1, true);
  int64_t selected_grads = 0;
  for (const Tensor& grad : one.grads) selected_grads += grad.defined() ? 1 : 0;
  EXPECT_GT(selected_grads, 8);  // every block's weights (4 each) and the patch embedding
  expect_identical(one, train_step_with_threads(2, true));
}

}  // namespace
}  // namespace vitune::testing
