// The committed tiny ViT run on the GPU against PyTorch's trace, at the tolerances of
// the host's golden tests: every intermediate of the forward pass, the logits, the loss
// (with and without label smoothing) and the gradient of every parameter.
#include <string>
#include <utility>
#include <vector>

#include "nn/checkpoint.h"
#include "nn/safetensors.h"
#include "nn/vit.h"
#include "op_harness.h"

namespace vitune::testing {
namespace {

class CudaTrace : public CudaTest {};

// The tiny ViT moved to the GPU, its batch of images and labels on the GPU, and the
// PyTorch trace.
struct GpuTinyVit {
  nn::LoadedVit loaded = nn::load_vit(data_path("tiny_vit.safetensors"), Device::cpu());
  nn::SafetensorsFile batch = nn::read_safetensors(data_path("tiny_images.safetensors"));
  nn::SafetensorsFile golden = nn::read_safetensors(data_path("tiny_trace.safetensors"));

  GpuTinyVit() { loaded.model->to(gpu()); }
  nn::VisionTransformer& model() { return *loaded.model; }
  autograd::Variable images() const { return autograd::Variable(batch.at("images").to(gpu())); }
  Tensor labels() const { return batch.at("labels").to(gpu()); }
};

TEST_F(CudaTrace, EveryIntermediateLogitsLossAndGradientMatchPyTorch) {
  GpuTinyVit vit;
  std::vector<std::pair<std::string, Tensor>> seen;
  autograd::Variable logits =
      vit.model().forward(vit.images(), [&](const std::string& name, const Tensor& v) { seen.emplace_back(name, v); });
  EXPECT_EQ(seen.size(), 20u);
  int compared = 0;
  for (const auto& [name, value] : seen) {
    EXPECT_EQ(value.device(), gpu()) << name;
    EXPECT_TRUE(tensors_close(value.to(Device::cpu()), vit.golden.at(name), kF32Forward, name));
    ++compared;
  }
  EXPECT_EQ(logits.value().device(), gpu());
  EXPECT_TRUE(tensors_close(logits.value().to(Device::cpu()), vit.golden.at("logits"), kF32Forward, "logits"));
  ++compared;

  autograd::Variable loss = autograd::cross_entropy(logits, vit.labels());
  EXPECT_TRUE(tensors_close(loss.value().to(Device::cpu()), vit.golden.at("loss"), kF32Forward, "loss"));
  ++compared;
  autograd::backward(loss);
  for (nn::Parameter* p : vit.model().parameters()) {
    ASSERT_TRUE(p->grad().defined()) << p->name();
    EXPECT_EQ(p->grad().device(), gpu()) << p->name();
    EXPECT_TRUE(tensors_close(p->grad().to(Device::cpu()), vit.golden.at("grad." + p->name()), kF32Gradient,
                              "grad." + p->name()));
    ++compared;
  }
  // logits, loss, 20 intermediates and 32 gradients, as the host's trace command.
  EXPECT_EQ(compared, 1 + 1 + 20 + 32);
}

TEST_F(CudaTrace, LabelSmoothedLossAndHeadGradientMatchPyTorch) {
  GpuTinyVit vit;
  autograd::Variable loss = autograd::cross_entropy(vit.model().forward(vit.images()), vit.labels(), 0.1);
  EXPECT_TRUE(tensors_close(loss.value().to(Device::cpu()), vit.golden.at("loss_smoothed"), kF32Forward,
                            "loss_smoothed"));
  autograd::backward(loss);
  EXPECT_TRUE(tensors_close(vit.model().parameter("head.weight").grad().to(Device::cpu()),
                            vit.golden.at("grad_smoothed.head.weight"), kF32Gradient, "head.weight"));
}

}  // namespace
}  // namespace vitune::testing
