// LoRA on the tiny ViT: forward and gradients against PyTorch (tools/make_lora_golden.py),
// a float64 finite-difference check of the adapted linear layer, the freeze states and
// trainable count, the initialisation, the merged model against the adapted one, and a
// training step's peak memory against full finetuning's; the model-level tests on every
// device.
#include <cmath>

#include "engine/allocator.h"
#include "engine/ops.h"
#include "device_test.h"
#include "nn/lora.h"
#include "nn/optimizer.h"
#include "vit_fixture.h"

namespace vitune::testing {
namespace {

constexpr int kRank = 4;
constexpr double kAlpha = 8.0;

bool is_lora(const std::string& name) { return name.find(".lora_") != std::string::npos; }

// The tiny ViT with adapters on qkv and fc1, their A and B copied from the golden file.
void add_golden_adapters(nn::VisionTransformer& model, const nn::SafetensorsFile& golden) {
  model.add_lora({kRank, kAlpha, {nn::LoraTarget::Qkv, nn::LoraTarget::Fc1}, 7});
  for (nn::Parameter* p : model.parameters()) {
    if (is_lora(p->name())) p->mutable_value().copy_from(golden.at(p->name()));
  }
}

class LoraOnDevice : public OnDevice {};

TEST_P(LoraOnDevice, ForwardLossAndGradientsMatchPyTorch) {
  TinyVit vit(device());
  nn::SafetensorsFile golden = nn::read_safetensors(data_path("lora_tiny.safetensors"));
  add_golden_adapters(vit.model(), golden);
  autograd::Variable logits = vit.model().forward(vit.images());
  EXPECT_TRUE(tensors_close(logits.value(), golden.at("logits"), kF32Forward, "logits"));
  autograd::Variable loss = autograd::cross_entropy(logits, vit.labels());
  EXPECT_TRUE(tensors_close(loss.value(), golden.at("loss"), kF32Forward, "loss"));
  autograd::backward(loss);
  int compared = 0;
  for (nn::Parameter* p : vit.model().parameters()) {
    if (p->state() == nn::FreezeState::Frozen) {
      EXPECT_FALSE(p->grad().defined()) << p->name() << " is frozen but got a gradient";
      continue;
    }
    EXPECT_TRUE(tensors_close(p->grad(), golden.at("grad." + p->name()), kF32Gradient, "grad." + p->name()));
    ++compared;
  }
  EXPECT_EQ(compared, 2 * 2 * 2 + 2);  // A and B of qkv and fc1 in two blocks, the head
}

TEST_P(LoraOnDevice, OnlyTheAdaptersAndTheHeadTrain) {
  TinyVit vit(device());
  nn::VisionTransformer& model = vit.model();
  model.add_lora({kRank, kAlpha, {nn::LoraTarget::Qkv, nn::LoraTarget::Proj, nn::LoraTarget::Fc1,
                                  nn::LoraTarget::Fc2}, 1});
  const int64_t dim = 32, hidden = 128, classes = 10;
  const int64_t per_block = kRank * ((dim + 3 * dim) + (dim + dim) + (dim + hidden) + (hidden + dim));
  int64_t trainable = 0;
  for (const nn::Parameter* p : model.parameters()) {
    trainable += p->trainable_count();
    bool should_train = is_lora(p->name()) || p->name().rfind("head.", 0) == 0;
    EXPECT_EQ(p->state(), should_train ? nn::FreezeState::Trainable : nn::FreezeState::Frozen) << p->name();
  }
  EXPECT_EQ(trainable, 2 * per_block + classes * dim + classes);
  EXPECT_EQ(model.parameter("blocks.1.mlp.fc2.lora_A").shape(), Shape({kRank, hidden}));
  EXPECT_EQ(model.parameter("blocks.1.mlp.fc2.lora_B").shape(), Shape({dim, kRank}));
  // The adapter's parameters follow their layer's bias.
  const auto& params = model.parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i]->name() == "blocks.0.attn.qkv.bias") {
      EXPECT_EQ(params[i + 1]->name(), "blocks.0.attn.qkv.lora_A");
      EXPECT_EQ(params[i + 2]->name(), "blocks.0.attn.qkv.lora_B");
    }
  }
}

TEST_P(LoraOnDevice, StartsAsTheBaseModelWithKaimingUniformA) {
  TinyVit base(device()), adapted(device());
  adapted.model().add_lora({kRank, kAlpha, {nn::LoraTarget::Qkv, nn::LoraTarget::Fc2}, 5});
  Tensor expected = base.model().forward(base.images()).value();
  Tensor actual = adapted.model().forward(adapted.images()).value();
  EXPECT_TRUE(bitwise_equal(actual, expected)) << "B starts at zero, so the adapters add exact zeros";
  const Tensor& a = adapted.model().parameter("blocks.0.mlp.fc2.lora_A").value();
  const double bound = 1.0 / std::sqrt(128.0);
  double max_abs = 0;
  for (int64_t i = 0; i < a.numel(); ++i) max_abs = std::max(max_abs, std::fabs(a.item(i)));
  EXPECT_LE(max_abs, bound);
  EXPECT_GT(max_abs, 0.5 * bound);
  EXPECT_EQ(ops::sum_squares(adapted.model().parameter("blocks.0.mlp.fc2.lora_B").value()), 0.0);
  // Seeded: the same seed draws the same A, another seed another, and layers differ.
  TinyVit again(device()), other(device());
  again.model().add_lora({kRank, kAlpha, {nn::LoraTarget::Qkv, nn::LoraTarget::Fc2}, 5});
  other.model().add_lora({kRank, kAlpha, {nn::LoraTarget::Qkv, nn::LoraTarget::Fc2}, 6});
  const std::string name = "blocks.1.attn.qkv.lora_A";
  EXPECT_TRUE(bitwise_equal(again.model().parameter(name).value(), adapted.model().parameter(name).value()));
  EXPECT_FALSE(bitwise_equal(other.model().parameter(name).value(), adapted.model().parameter(name).value()));
  EXPECT_FALSE(bitwise_equal(adapted.model().parameter("blocks.0.attn.qkv.lora_A").value(),
                             adapted.model().parameter(name).value()));
}

TEST_P(LoraOnDevice, MergedModelComputesTheAdaptedFunction) {
  TinyVit vit(device());
  nn::SafetensorsFile golden = nn::read_safetensors(data_path("lora_tiny.safetensors"));
  add_golden_adapters(vit.model(), golden);
  Tensor adapted = vit.model().forward(vit.images()).value();
  vit.model().merge_lora();
  EXPECT_FALSE(vit.model().has_lora());
  TinyVit plain(device());
  ASSERT_EQ(vit.model().parameters().size(), plain.model().parameters().size());
  for (size_t i = 0; i < plain.model().parameters().size(); ++i) {
    EXPECT_EQ(vit.model().parameters()[i]->name(), plain.model().parameters()[i]->name());
  }
  // The merged weight is W + (alpha / r) B A; only rounding separates the two forwards.
  EXPECT_TRUE(tensors_close(vit.model().forward(vit.images()).value(), adapted, {1e-5, 1e-5}, "merged logits"));
  // Merging changed the targeted weights only.
  EXPECT_FALSE(bitwise_equal(vit.model().parameter("blocks.0.attn.qkv.weight").value(),
                             plain.model().parameter("blocks.0.attn.qkv.weight").value()));
  EXPECT_TRUE(bitwise_equal(vit.model().parameter("blocks.0.attn.proj.weight").value(),
                            plain.model().parameter("blocks.0.attn.proj.weight").value()));
}

// Bytes held by tensors at the peak of one AdamW step (forward, backward, update) of
// `model` on 64 random images, above those held before it, from the allocator's counters.
int64_t training_step_peak(nn::VisionTransformer& model, Device device) {
  const nn::VitConfig& c = model.config();
  const int64_t batch = 64;
  autograd::Variable images(random_normal({batch, c.in_chans, c.img_size, c.img_size}, DType::F32, 3, 0).to(device));
  std::vector<int64_t> classes(batch);
  for (int64_t i = 0; i < batch; ++i) classes[i] = i % c.num_classes;
  Tensor labels = Tensor::from_vector<int64_t>({batch}, classes, device);
  std::vector<nn::Parameter*> trainable;
  for (nn::Parameter* p : model.parameters()) {
    if (p->state() != nn::FreezeState::Frozen) trainable.push_back(p);
  }
  nn::AdamW optimizer(trainable, {});
  reset_peak_memory(device);
  const int64_t before = memory_stats(device).current_bytes;
  autograd::backward(autograd::cross_entropy(model.forward(images), labels));
  optimizer.step();
  return memory_stats(device).peak_bytes - before;
}

// An adapter keeps no more activations than the layer it adapts, and LoRA makes no
// gradient or optimizer state for the frozen weights: its step peaks below full finetuning's.
TEST_P(LoraOnDevice, TrainingStepPeaksBelowFullFinetuning) {
  TinyVit full(device()), adapted(device());
  adapted.model().add_lora({kRank, kAlpha, {nn::LoraTarget::Qkv, nn::LoraTarget::Proj, nn::LoraTarget::Fc1,
                                            nn::LoraTarget::Fc2}, 2});
  const int64_t full_peak = training_step_peak(full.model(), device());
  const int64_t lora_peak = training_step_peak(adapted.model(), device());
  EXPECT_GT(full_peak, 0);
  EXPECT_LT(lora_peak, full_peak) << "LoRA step peak " << lora_peak << " bytes, full finetuning " << full_peak;
}

// Central differences of L = sum(r * y) for the adapted layer in float64.
TEST(Lora, AdaptedLinearGradientsMatchFiniteDifferences) {
  nn::Linear layer("layer", 5, 4, Device::cpu());
  layer.weight.mutable_value() = random_normal({4, 5}, DType::F64, 1, 0);
  layer.bias.mutable_value() = random_normal({4}, DType::F64, 1, 1);
  layer.weight.freeze();
  layer.bias.freeze();
  layer.attach_lora(3, 1.5, 1, 2);
  layer.lora->lora_A.mutable_value() = random_normal({3, 5}, DType::F64, 1, 3);
  layer.lora->lora_B.mutable_value() = random_normal({4, 3}, DType::F64, 1, 4);
  autograd::Variable x(random_normal({2, 3, 5}, DType::F64, 1, 5), true);
  Tensor r = random_normal({2, 3, 4}, DType::F64, 1, 6);
  autograd::backward(layer.forward(x), r);
  EXPECT_FALSE(layer.weight.grad().defined());
  EXPECT_FALSE(layer.bias.grad().defined());

  auto objective = [&] {
    autograd::NoGradGuard no_grad;
    return dot(layer.forward(x).value(), r);
  };
  auto check = [&](Tensor& value, const Tensor& grad, const std::string& what) {
    const double h = 1e-6;
    for (int64_t i = 0; i < value.numel(); ++i) {
      double saved = value.data<double>()[i];
      value.data<double>()[i] = saved + h;
      double up = objective();
      value.data<double>()[i] = saved - h;
      double down = objective();
      value.data<double>()[i] = saved;
      EXPECT_NEAR(grad.item(i), (up - down) / (2 * h), 1e-7) << what << " entry " << i;
    }
  };
  check(layer.lora->lora_A.mutable_value(), layer.lora->lora_A.grad(), "dA");
  check(layer.lora->lora_B.mutable_value(), layer.lora->lora_B.grad(), "dB");
  check(x.mutable_value(), x.grad(), "dx");
}

TEST(Lora, BadOptionsAreClearErrors) {
  EXPECT_THROW(nn::parse_lora_targets("qkv,mlp", "--lora-targets"), Error);
  EXPECT_THROW(nn::parse_lora_targets("qkv,qkv", "--lora-targets"), Error);
  EXPECT_THROW(nn::parse_lora_targets("", "--lora-targets"), Error);
  auto targets = nn::parse_lora_targets("fc2,qkv", "--lora-targets");
  EXPECT_EQ(targets, (std::vector<nn::LoraTarget>{nn::LoraTarget::Fc2, nn::LoraTarget::Qkv}));
  TinyVit vit;
  EXPECT_THROW(vit.model().add_lora({0, 1.0, {nn::LoraTarget::Qkv}, 0}), Error);
  EXPECT_THROW(vit.model().add_lora({4, -1.0, {nn::LoraTarget::Qkv}, 0}), Error);
  EXPECT_THROW(vit.model().add_lora({4, 1.0, {}, 0}), Error);
  try {
    nn::parse_lora_targets("qkv,mlp", "--lora-targets");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'mlp'"), std::string::npos) << e.what();
  }
}

VITUNE_ON_EVERY_DEVICE(LoraOnDevice);

}  // namespace
}  // namespace vitune::testing
