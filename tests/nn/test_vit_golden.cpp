// The tiny ViT against PyTorch: every intermediate of the forward pass, the logits, the
// loss (with and without label smoothing) and the gradient of every parameter.
#include <map>

#include "device_test.h"
#include "vit_fixture.h"

namespace vitune::testing {
namespace {

class VitGoldenOnDevice : public OnDevice {};

TEST(VitGolden, ConfigComesFromTheMetadata) {
  TinyVit vit;
  const nn::VitConfig& c = vit.model().config();
  EXPECT_EQ(c.img_size, 16);
  EXPECT_EQ(c.patch, 4);
  EXPECT_EQ(c.dim, 32);
  EXPECT_EQ(c.depth, 2);
  EXPECT_EQ(c.heads, 4);
  EXPECT_EQ(c.num_classes, 10);
  EXPECT_DOUBLE_EQ(c.ln_eps, 1e-6);
  EXPECT_EQ(vit.loaded.layout, nn::CheckpointLayout::Timm);
}

TEST_P(VitGoldenOnDevice, EveryIntermediateAndTheLogitsMatchPyTorch) {
  TinyVit vit(device());
  nn::SafetensorsFile golden = nn::read_safetensors(data_path("tiny_trace.safetensors"));
  std::map<std::string, Tensor> seen;
  autograd::Variable logits =
      vit.model().forward(vit.images(), [&](const std::string& name, const Tensor& v) { seen[name] = v; });
  EXPECT_EQ(seen.size(), 20u);
  for (const auto& [name, value] : seen) {
    EXPECT_TRUE(tensors_close(value, golden.at(name), kF32Forward, name));
  }
  EXPECT_TRUE(tensors_close(logits.value(), golden.at("logits"), kF32Forward, "logits"));
}

TEST_P(VitGoldenOnDevice, LossAndEveryGradientMatchPyTorch) {
  TinyVit vit(device());
  nn::SafetensorsFile golden = nn::read_safetensors(data_path("tiny_trace.safetensors"));
  autograd::Variable loss = autograd::cross_entropy(vit.model().forward(vit.images()), vit.labels());
  EXPECT_TRUE(tensors_close(loss.value(), golden.at("loss"), kF32Forward, "loss"));
  autograd::backward(loss);
  for (nn::Parameter* p : vit.model().parameters()) {
    EXPECT_TRUE(tensors_close(p->grad(), golden.at("grad." + p->name()), kF32Gradient, "grad." + p->name()));
  }
}

TEST_P(VitGoldenOnDevice, LabelSmoothedLossAndHeadGradientMatchPyTorch) {
  TinyVit vit(device());
  nn::SafetensorsFile golden = nn::read_safetensors(data_path("tiny_trace.safetensors"));
  autograd::Variable loss = autograd::cross_entropy(vit.model().forward(vit.images()), vit.labels(), 0.1);
  EXPECT_TRUE(tensors_close(loss.value(), golden.at("loss_smoothed"), kF32Forward, "loss_smoothed"));
  autograd::backward(loss);
  EXPECT_TRUE(tensors_close(vit.model().parameter("head.weight").grad(),
                            golden.at("grad_smoothed.head.weight"), kF32Gradient, "head.weight"));
}

VITUNE_ON_EVERY_DEVICE(VitGoldenOnDevice);

}  // namespace
}  // namespace vitune::testing
