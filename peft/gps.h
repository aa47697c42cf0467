// GPS (Gradient-based Parameter Selection): the score of a weight entry is the absolute
// value of its gradient summed over every batch of the task data. The loss is either
// cross-entropy through a fresh linear head on the cls feature, or, as the GPS code
// does, the supervised contrastive loss on the L2-normalised cls features of two
// augmented views of each image.
#pragma once
#include <string>
#include <utility>
#include <vector>
#include "data/dataset.h"
#include "data/transform.h"
#include "engine/tensor.h"
#include "nn/vit.h"

namespace vitune::peft {

enum class GpsLoss { CrossEntropy, SupervisedContrastive };
GpsLoss parse_gps_loss(const std::string& text);  // "ce" or "supcon"

struct GpsOptions {
  GpsLoss loss = GpsLoss::SupervisedContrastive;
  double temperature = 0.07;
  int64_t batch_size = 32;
  uint64_t seed = 0;        // the fresh head and the augmentations
  int loader_threads = 2;
};

// |sum over batches of dL/dW| for each named parameter, shaped like the parameter
// (f32), over the full batches of the dataset in order (the last partial batch is
// dropped, as in the GPS code). `eval_view` is the deterministic transform (cross-entropy); `train_view` the
// augmentation applied twice, with different draws, for the contrastive loss. The
// model's freeze states and head are restored on return.
std::vector<std::pair<std::string, Tensor>> gps_scores(nn::VisionTransformer& model,
                                                       const std::vector<std::string>& names,
                                                       const data::Dataset& dataset,
                                                       const data::Transform& eval_view,
                                                       const data::Transform& train_view,
                                                       const GpsOptions& options);

}  // namespace vitune::peft
