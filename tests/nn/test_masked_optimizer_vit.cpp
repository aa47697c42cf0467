// Sparse finetuning of the tiny ViT through the whole tape, on every device: weights
// trainable at a set of entries get their gradient from the linear layers' masked path
// (the FLOP counter shows exactly 2 T per selected entry, no dense product), AdamW over
// several steps equals a plain AdamW written here on the host that updates only the
// selected entries from dense gradients, and every unselected entry keeps its exact bits.
#include <cmath>
#include <map>

#include "engine/flop_counter.h"
#include "device_test.h"
#include "nn/optimizer.h"
#include "vit_fixture.h"

namespace vitune::testing {
namespace {

constexpr int kSteps = 4;
constexpr double kLr = 1e-2, kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8, kWeightDecay = 0.05;

// Every third entry of qkv, every seventh of fc2 and of the patch embedding, in block 0.
std::map<std::string, Tensor> selection(const nn::VisionTransformer& model) {
  std::map<std::string, Tensor> out;
  for (auto [name, stride] : {std::pair<std::string, int64_t>{"blocks.0.attn.qkv.weight", 3},
                              {"blocks.0.mlp.fc2.weight", 7},
                              {"patch_embed.proj.weight", 7}}) {
    std::vector<int64_t> indices;
    for (int64_t i = 1; i < model.parameter(name).numel(); i += stride) indices.push_back(i);
    out[name] = Tensor::from_vector<int64_t>({int64_t(indices.size())}, indices, Device::cpu());
  }
  return out;
}

// Freezes all but the head; the selected tensors train at their entries, or densely.
void set_states(nn::VisionTransformer& model, const std::map<std::string, Tensor>& selected, bool masked) {
  for (nn::Parameter* p : model.parameters()) {
    auto it = selected.find(p->name());
    if (it != selected.end()) {
      if (masked) p->train_entries(it->second); else p->train();
    } else if (p->name().rfind("head.", 0) != 0) {
      p->freeze();
    }
  }
}

int64_t backward_flops(TinyVit& vit) {
  autograd::Variable loss = autograd::cross_entropy(vit.model().forward(vit.images()), vit.labels());
  reset_flop_counter();
  autograd::backward(loss);
  return flops_counted();
}

// The same tensors trained densely cost 2 T numel for their weight gradients; masked,
// 2 T selected. Everything else in the two backward passes is the same work.
class MaskedFinetuning : public OnDevice {};

TEST_P(MaskedFinetuning, MaskedWeightsTakeTheMaskedGradientPathOnly) {
  TinyVit masked(device()), dense(device());
  auto selected = selection(masked.model());
  set_states(masked.model(), selected, true);
  set_states(dense.model(), selected, false);
  int64_t masked_flops = backward_flops(masked);
  int64_t dense_flops = backward_flops(dense);
  const int64_t images = 4, tokens = 17, patches = 16;
  int64_t saved = 0;
  for (const auto& [name, indices] : selected) {
    const nn::Parameter& p = masked.model().parameter(name);
    int64_t rows = images * (name == "patch_embed.proj.weight" ? patches : tokens);
    saved += 2 * rows * (p.numel() - indices.numel());
    EXPECT_EQ(p.grad().shape(), Shape({indices.numel()})) << name;
  }
  EXPECT_EQ(masked_flops, dense_flops - saved);
}

TEST_P(MaskedFinetuning, AdamWOnTheSelectionEqualsPlainAdamWFromDenseGradients) {
  TinyVit masked(device()), dense;  // the reference runs on the host
  auto selected = selection(masked.model());
  set_states(masked.model(), selected, true);
  set_states(dense.model(), selected, false);
  std::map<std::string, Tensor> start;
  for (nn::Parameter* p : masked.model().parameters()) start[p->name()] = p->value().to(Device::cpu()).clone();

  std::vector<nn::Parameter*> trainable;
  for (nn::Parameter* p : masked.model().parameters()) {
    if (p->state() != nn::FreezeState::Frozen) trainable.push_back(p);
  }
  nn::AdamW optimizer(trainable, {kLr, kBeta1, kBeta2, kEps, kWeightDecay});

  // The reference: per entry m and v in double, the selected entries (all of the head)
  // updated from the dense gradient, nothing else touched.
  std::map<std::string, std::vector<double>> m, v;
  for (int step = 1; step <= kSteps; ++step) {
    autograd::backward(autograd::cross_entropy(masked.model().forward(masked.images()), masked.labels()));
    optimizer.step();
    optimizer.zero_grad();

    autograd::backward(autograd::cross_entropy(dense.model().forward(dense.images()), dense.labels()));
    for (nn::Parameter* p : dense.model().parameters()) {
      if (p->state() == nn::FreezeState::Frozen) continue;
      std::vector<int64_t> entries;
      auto it = selected.find(p->name());
      if (it != selected.end()) {
        entries = it->second.to_vector<int64_t>();
      } else {
        for (int64_t i = 0; i < p->numel(); ++i) entries.push_back(i);
      }
      auto& mm = m[p->name()];
      auto& vv = v[p->name()];
      mm.resize(entries.size());
      vv.resize(entries.size());
      float* value = p->mutable_value().data<float>();
      const float* grad = p->grad().data<float>();
      for (size_t e = 0; e < entries.size(); ++e) {
        double g = grad[entries[e]];
        double w = value[entries[e]] * (1 - kLr * kWeightDecay);
        mm[e] = kBeta1 * mm[e] + (1 - kBeta1) * g;
        vv[e] = kBeta2 * vv[e] + (1 - kBeta2) * g * g;
        double m_hat = mm[e] / (1 - std::pow(kBeta1, step));
        double v_hat = vv[e] / (1 - std::pow(kBeta2, step));
        value[entries[e]] = float(w - kLr * m_hat / (std::sqrt(v_hat) + kEps));
      }
      p->zero_grad();
    }
  }
  for (nn::Parameter* p : masked.model().parameters()) {
    const Tensor after = p->value().to(Device::cpu());
    // Gradients differ from the dense ones only by summation order; AdamW's update is
    // about lr per step, so the weights agree to well under a thousandth of it.
    EXPECT_TRUE(tensors_close(after, dense.model().parameter(p->name()).value(), {2e-6, 1e-5}, p->name()));
    if (p->state() == nn::FreezeState::Frozen) {
      EXPECT_TRUE(bitwise_equal(after, start.at(p->name()))) << p->name() << " changed while frozen";
      continue;
    }
    auto it = selected.find(p->name());
    if (it == selected.end()) continue;
    std::vector<bool> chosen(size_t(p->numel()), false);
    for (int64_t i : it->second.to_vector<int64_t>()) chosen[size_t(i)] = true;
    int64_t changed = 0;
    for (int64_t i = 0; i < p->numel(); ++i) {
      const float now = after.data<float>()[i], before = start.at(p->name()).data<float>()[i];
      if (!chosen[size_t(i)]) {
        ASSERT_EQ(std::memcmp(&now, &before, sizeof now), 0) << p->name() << " entry " << i << " is not selected";
      } else {
        changed += now != before;
      }
    }
    EXPECT_EQ(changed, it->second.numel()) << p->name();
  }
  EXPECT_EQ(optimizer.state_bytes(), 2 * int64_t(sizeof(float)) *
                                         (selected.at("blocks.0.attn.qkv.weight").numel() +
                                          selected.at("blocks.0.mlp.fc2.weight").numel() +
                                          selected.at("patch_embed.proj.weight").numel() + 10 * 32 + 10));
}

VITUNE_ON_EVERY_DEVICE(MaskedFinetuning);

}  // namespace
}  // namespace vitune::testing
