// Per-feature mean |a| of the inputs of a ViT's linear maps, reduced as the forward
// pass reports each activation.
#include "peft/activation_stats.h"

#include "autograd/variable.h"
#include "engine/devices.h"
#include "engine/ops.h"
#include "engine/upload.h"

namespace vitune::peft {

namespace {

constexpr const char* kPatchesName = "patches";

}  // namespace

std::vector<MeasuredLayer> measured_layers(const nn::VisionTransformer& model) {
  const nn::VitConfig& c = model.config();
  const int64_t patch_features = int64_t(c.in_chans) * c.patch * c.patch;
  std::vector<MeasuredLayer> layers;
  layers.push_back({"patch_embed.proj.weight", kPatchesName, patch_features, c.num_patches()});
  for (size_t i = 0; i < model.blocks.size(); ++i) {
    const std::string block = "blocks." + std::to_string(i) + ".";
    layers.push_back({block + "attn.qkv.weight", block + "norm1_out", c.dim, c.tokens()});
    layers.push_back({block + "attn.proj.weight", block + "attn_ctx", c.dim, c.tokens()});
    layers.push_back({block + "mlp.fc1.weight", block + "norm2_out", c.dim, c.tokens()});
    layers.push_back({block + "mlp.fc2.weight", block + "fc1_act", c.hidden(), c.tokens()});
  }
  return layers;
}

ActivationStats::ActivationStats(const nn::VisionTransformer& model)
    : model_(model), layers_(measured_layers(model)) {
  for (size_t i = 0; i < layers_.size(); ++i) {
    layer_of_input_[layers_[i].input_name] = i;
    sums_.push_back(Tensor::zeros({layers_[i].in_features}, DType::F64, model.device()));
  }
}

void ActivationStats::add_activation(size_t layer, const Tensor& value) {
  const MeasuredLayer& measured = layers_[layer];
  VITUNE_CHECK(value.ndim() == 3 && value.dim(1) == measured.tokens_per_image &&
                   value.dim(2) == measured.in_features,
               "activation statistics: ", measured.input_name, " is ", value.str(), ", expected [B, ",
               measured.tokens_per_image, ", ", measured.in_features, "] for ", measured.weight_name);
  ops::token_abs_sums_into(value, sums_[layer]);
}

void ActivationStats::add_batch(const Tensor& images) {
  const nn::VitConfig& c = model_.config();
  VITUNE_CHECK(images.ndim() == 4 && images.dim(1) == c.in_chans && images.dim(2) == c.img_size &&
                   images.dim(3) == c.img_size,
               "activation statistics: images are ", images.str(), ", expected [B, ", c.in_chans, ", ",
               c.img_size, ", ", c.img_size, "] for this model");
  autograd::NoGradGuard no_tape;
  // The patches are cut, and the forward pass runs, on the model's device.
  const Tensor on_model = images.to(model_.device());
  add_activation(0, ops::patchify(on_model, c.patch));
  model_.features(autograd::Variable(on_model), [this](const std::string& name, const Tensor& value) {
    auto found = layer_of_input_.find(name);
    if (found != layer_of_input_.end()) add_activation(found->second, value);
  });
  images_ += images.dim(0);
}

std::vector<std::pair<std::string, Tensor>> ActivationStats::means() const {
  VITUNE_CHECK(images_ > 0, "activation statistics: no images were measured");
  std::vector<std::pair<std::string, Tensor>> out;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const double count = double(images_) * double(layers_[i].tokens_per_image);
    std::vector<double> mean = sums_[i].to_vector<double>();  // the reduced sums, to the host
    for (double& m : mean) m /= count;
    out.emplace_back(layers_[i].weight_name, Tensor::from_vector({int64_t(mean.size())}, mean, Device::cpu()));
  }
  return out;
}

void measure_activations(ActivationStats& stats, data::Loader& loader,
                         const std::function<void(int64_t)>& on_batch) {
  VITUNE_CHECK(!loader.options().shuffle, "activation statistics: the loader must not shuffle");
  // On a device of its own, batch b + 1 is fetched, and its copy to the device started,
  // before batch b is measured, so that the copy runs beside b's forward pass
  // (engine/upload.h; the emulated device runs the same sequence). On the cpu each batch
  // is fetched when it is needed.
  const Device device = stats.device();
  const bool fetch_ahead = !device.is_cpu();
  auto fetch = [&] { return Upload(loader.next().images, device); };
  Upload ahead;
  for (int64_t b = 0; b < loader.batches_per_epoch(); ++b) {
    Tensor images = fetch_ahead && b > 0 ? ahead.take() : fetch().take();
    if (fetch_ahead && b + 1 < loader.batches_per_epoch()) ahead = fetch();
    if (images.defined() && images.numel() > 0) stats.add_batch(images);
    if (on_batch) on_batch(stats.images());
  }
  // Nothing above waits for the device: the work is done, for timings, only here.
  synchronize(device);
}

}  // namespace vitune::peft
