// Per-feature mean |a| of the inputs of a ViT's linear maps, reduced as the forward
// pass reports each activation.
#include "peft/activation_stats.h"

#include <algorithm>
#include <cmath>

#include "autograd/variable.h"
#include "engine/ops.h"
#include "engine/parallel.h"

namespace vitune::peft {

namespace {

constexpr const char* kPatchesName = "patches";

// Features per parallel task: an (image, feature block) pair is one output chunk,
// summed over the tokens in order.
constexpr int64_t kFeatureBlock = 256;

// sums[b * F + f] = sum over t, in order, of |x[b, t, f]| (x [B, T, F] on the host).
std::vector<double> per_image_abs_sums(const Tensor& x) {
  const int64_t batch = x.dim(0), tokens = x.dim(1), features = x.dim(2);
  std::vector<double> sums(size_t(batch * features), 0.0);
  const int64_t blocks = (features + kFeatureBlock - 1) / kFeatureBlock;
  on_float_dtype(x, "activation statistics", [&](auto zero) {
    using T = decltype(zero);
    const T* values = x.data<T>();
    parallel_for(batch * blocks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) {
        const int64_t b = task / blocks;
        const int64_t first = (task % blocks) * kFeatureBlock;
        const int64_t last = std::min(features, first + kFeatureBlock);
        double* acc = sums.data() + b * features;
        for (int64_t t = 0; t < tokens; ++t) {
          const T* row = values + (b * tokens + t) * features;
          for (int64_t f = first; f < last; ++f) acc[f] += std::fabs(double(row[f]));
        }
      }
    });
  });
  return sums;
}

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
    sums_.emplace_back(size_t(layers_[i].in_features), 0.0);
  }
}

void ActivationStats::add_activation(size_t layer, const Tensor& value) {
  const MeasuredLayer& measured = layers_[layer];
  VITUNE_CHECK(value.ndim() == 3 && value.dim(1) == measured.tokens_per_image &&
                   value.dim(2) == measured.in_features,
               "activation statistics: ", measured.input_name, " is ", value.str(), ", expected [B, ",
               measured.tokens_per_image, ", ", measured.in_features, "] for ", measured.weight_name);
  // An activation on a CUDA device is copied to the host once and reduced there.
  const std::vector<double> per_image = per_image_abs_sums(value.to(Device::cpu()));
  std::vector<double>& total = sums_[layer];
  const size_t features = total.size();
  for (int64_t b = 0; b < value.dim(0); ++b) {
    const double* image = per_image.data() + size_t(b) * features;
    for (size_t f = 0; f < features; ++f) total[f] += image[f];
  }
}

void ActivationStats::add_batch(const Tensor& images) {
  const nn::VitConfig& c = model_.config();
  VITUNE_CHECK(images.ndim() == 4 && images.dim(1) == c.in_chans && images.dim(2) == c.img_size &&
                   images.dim(3) == c.img_size,
               "activation statistics: images are ", images.str(), ", expected [B, ", c.in_chans, ", ",
               c.img_size, ", ", c.img_size, "] for this model");
  autograd::NoGradGuard no_tape;
  // The patches are cut on the images' device; the forward pass runs on the model's.
  add_activation(0, ops::patchify(images, c.patch));
  model_.features(autograd::Variable(images.to(model_.device())), [this](const std::string& name, const Tensor& value) {
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
    std::vector<double> mean(sums_[i].size());
    for (size_t f = 0; f < mean.size(); ++f) mean[f] = sums_[i][f] / count;
    out.emplace_back(layers_[i].weight_name, Tensor::from_vector({int64_t(mean.size())}, mean, Device::cpu()));
  }
  return out;
}

void measure_activations(ActivationStats& stats, data::Loader& loader,
                         const std::function<void(int64_t)>& on_batch) {
  VITUNE_CHECK(!loader.options().shuffle, "activation statistics: the loader must not shuffle");
  for (int64_t b = 0; b < loader.batches_per_epoch(); ++b) {
    data::Batch batch = loader.next();
    if (batch.images.defined() && batch.images.numel() > 0) stats.add_batch(batch.images);
    if (on_batch) on_batch(stats.images());
  }
}

}  // namespace vitune::peft
