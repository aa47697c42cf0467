// vitune as a library: load a ViT checkpoint, classify a batch, then finetune a masked
// subset of its weights -- the 4 largest |W| of every row of each block's linear layers
// (and the head, in full) -- for a few SGD steps. Usage: finetune_masked MODEL BATCH [DEVICE],
// with BATCH a safetensors file of `images` [B, C, H, W] f32 and `labels` [B] i64 and
// DEVICE cpu (the default), emulated or cuda.
#include <cstdio>

#include "autograd/functions.h"
#include "nn/checkpoint.h"
#include "nn/optimizer.h"
#include "nn/safetensors.h"
#include "peft/selection.h"

int main(int argc, char** argv) try {
  using namespace vitune;
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL.safetensors BATCH.safetensors [cpu|emulated|cuda]\n", argv[0]);
    return 2;
  }
  const Device device = parse_device(argc == 4 ? argv[3] : "cpu", "DEVICE");
  const nn::LoadedVit loaded = nn::load_vit(argv[1], device);
  nn::VisionTransformer& model = *loaded.model;
  const nn::SafetensorsFile batch = nn::read_safetensors(argv[2]);
  const autograd::Variable images(batch.at("images").to(model.device()));
  const Tensor labels = batch.at("labels").to(model.device());
  {
    autograd::NoGradGuard no_tape;
    const Tensor logits = model.forward(images).value().to(Device::cpu());
    std::printf("image 0: logit[0] %.4f of %lld classes\n", logits.item(0), (long long)logits.shape()[1]);
  }
  const peft::SelectionPolicy policy = peft::SelectionPolicy::gps_default();
  const peft::PolicyTargets targets = peft::resolve_policy(model, policy);
  std::vector<peft::TensorSelection> picks;
  for (const std::string& name : targets.selectable)
    picks.push_back({name, peft::magnitude_per_row(peft::as_rows(model.parameter(name).value()), 4)});
  const peft::SelectionMask mask = peft::assemble_mask(model, targets, picks, 4, policy, {{"method", "magnitude"}});
  peft::apply_mask(model, mask, "magnitude selection");
  std::printf("training %lld of %lld weights\n", (long long)mask.selected_count(), (long long)model.parameter_count());
  nn::Sgd sgd(model.parameters(), {/*lr=*/0.05, /*momentum=*/0.9});
  for (int step = 0; step < 5; ++step) {
    const autograd::Variable loss = autograd::cross_entropy(model.forward(images), labels);
    autograd::backward(loss);
    sgd.step();
    sgd.zero_grad();
    std::printf("step %d  loss %.5f\n", step, loss.value().to(Device::cpu()).item(0));
  }
  return 0;
} catch (const std::exception& error) {
  std::fprintf(stderr, "finetune_masked: %s\n", error.what());
  return 1;
}
