// GPS scores over a dataset: unshuffled loaders make the batches (one view for
// cross-entropy, two differently drawn views for the contrastive loss), a fresh head
// stands in for cross-entropy, and the model's own head is put back afterwards.
#include "peft/gps.h"

#include <memory>

#include "data/loader.h"
#include "peft/gps_accumulate.h"

namespace vitune::peft {

namespace {

// The model's head (classes, weights, freeze states), reinstalled by value on
// destruction: a new Linear with the saved values, or no head if there was none.
class SavedHead {
 public:
  explicit SavedHead(nn::VisionTransformer& model) : model_(model) {
    classes_ = model.head ? model.config().num_classes : 0;
    if (model.head) {
      weight_ = model.head->weight.value().clone();
      bias_ = model.head->bias.value().clone();
      weight_state_ = model.head->weight.state();
      bias_state_ = model.head->bias.state();
      weight_mask_ = model.head->weight.mask_indices();
      bias_mask_ = model.head->bias.mask_indices();
    }
  }
  ~SavedHead() {
    model_.reset_head(classes_, 0);
    if (!model_.head) return;
    model_.head->weight.mutable_value() = weight_;
    model_.head->bias.mutable_value() = bias_;
    restore_state(model_.head->weight, weight_state_, weight_mask_);
    restore_state(model_.head->bias, bias_state_, bias_mask_);
  }
  SavedHead(const SavedHead&) = delete;
  SavedHead& operator=(const SavedHead&) = delete;

 private:
  static void restore_state(nn::Parameter& p, nn::FreezeState state, const Tensor& mask) {
    switch (state) {
      case nn::FreezeState::Trainable: p.train(); break;
      case nn::FreezeState::Frozen: p.freeze(); break;
      case nn::FreezeState::Masked: p.train_entries(mask); break;
    }
  }

  nn::VisionTransformer& model_;
  int classes_ = 0;
  Tensor weight_, bias_, weight_mask_, bias_mask_;
  nn::FreezeState weight_state_ = nn::FreezeState::Trainable;
  nn::FreezeState bias_state_ = nn::FreezeState::Trainable;
};

data::LoaderOptions loader_options(const GpsOptions& options, uint64_t seed) {
  data::LoaderOptions o;
  o.batch_size = options.batch_size;
  o.shuffle = false;
  o.seed = seed;
  o.drop_last = true;  // as the GPS code's data loader: every batch has batch_size images
  o.threads = options.loader_threads;
  return o;
}

}  // namespace

GpsLoss parse_gps_loss(const std::string& text) {
  if (text == "ce") return GpsLoss::CrossEntropy;
  if (text == "supcon") return GpsLoss::SupervisedContrastive;
  throw Error(cat("GPS loss \"", text, "\" is unknown (expected ce or supcon)"));
}

std::vector<std::pair<std::string, Tensor>> gps_scores(nn::VisionTransformer& model,
                                                       const std::vector<std::string>& names,
                                                       const data::Dataset& dataset,
                                                       const data::Transform& eval_view,
                                                       const data::Transform& train_view,
                                                       const GpsOptions& options) {
  VITUNE_CHECK(options.batch_size >= 1, "GPS: batch size must be at least 1, got ", options.batch_size);
  VITUNE_CHECK(options.loader_threads >= 1, "GPS: loader threads must be at least 1, got ", options.loader_threads);
  VITUNE_CHECK(dataset.size() >= options.batch_size, "GPS: the dataset has ", dataset.size(),
               " images, fewer than one batch of ", options.batch_size,
               " (GPS drops the last partial batch, as its reference code does); lower the batch size");

  if (options.loss == GpsLoss::CrossEntropy) {
    SavedHead restore_head_on_return(model);
    const Device device = model.device();
    model.reset_head(dataset.num_classes(), options.seed);
    // The fresh head is drawn on the host (the same values on every device) and joins
    // the rest of the model.
    if (model.head) {
      model.head->weight.to(device);
      model.head->bias.to(device);
    }
    data::Loader loader(dataset, eval_view, loader_options(options, options.seed));
    int64_t remaining = loader.batches_per_epoch();
    return gps_scores_from_batches(model, names, options.loss, options.temperature, [&](GpsBatch& batch) {
      if (remaining-- == 0) return false;
      data::Batch next = loader.next();
      batch = {next.images, Tensor(), next.labels};
      return true;
    });
  }

  // Two loaders over the same unshuffled dataset, with different augmentation draws:
  // batch b of each holds the same images.
  data::Loader first(dataset, train_view, loader_options(options, options.seed));
  data::Loader second(dataset, train_view, loader_options(options, options.seed + 1));
  int64_t remaining = first.batches_per_epoch();
  return gps_scores_from_batches(model, names, options.loss, options.temperature, [&](GpsBatch& batch) {
    if (remaining-- == 0) return false;
    data::Batch a = first.next();
    data::Batch b = second.next();
    VITUNE_CHECK(a.indices == b.indices, "GPS: the two views of batch ", a.index, " hold different images");
    batch = {a.images, b.images, a.labels};
    return true;
  });
}

}  // namespace vitune::peft
