// The core of GPS, on batches that are already made: accumulate the gradient of the
// per-batch mean loss over every batch for the named parameters only, then take |.|.
// gps_scores (gps.h) feeds it from data loaders; tests feed it fixed tensors.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "engine/tensor.h"
#include "nn/vit.h"
#include "peft/gps.h"

namespace vitune::peft {

// One batch: images [B, C, H, W] in the model's dtype, labels i64 [B]; for the
// contrastive loss `second_view` holds a second view of the same B images (undefined
// for cross-entropy).
struct GpsBatch {
  Tensor images;
  Tensor second_view;
  Tensor labels;
};

// Fills `batch` with the next batch and returns true, or returns false at the end.
using GpsBatchSource = std::function<bool(GpsBatch& batch)>;

// |sum over batches of dL_b/dW| for each named parameter, shaped like it (f32), where
// L_b is the mean loss of batch b:
//   cross-entropy    L_b = CE(model.forward(images), labels); the model needs a head;
//   supervised contrastive  L_b = SupCon([features(images); features(second_view)],
//                    [labels; labels], temperature), on the final-normed cls features.
// Exactly the named parameters are trainable (dense gradients) while it runs; the
// batch gradients add up in their gradients, in the model's dtype, as in the GPS code.
// Every freeze state is restored on return (also when it throws), and every parameter's
// gradient is dropped. At least one batch is required; with the contrastive loss the
// head ("head.*") cannot be named. The batches may be made on the host: each is moved
// to the model's device, where the forward and backward passes and the accumulation
// run; the scores are on the host.
std::vector<std::pair<std::string, Tensor>> gps_scores_from_batches(nn::VisionTransformer& model,
                                                                    const std::vector<std::string>& names,
                                                                    GpsLoss loss, double temperature,
                                                                    const GpsBatchSource& next_batch);

}  // namespace vitune::peft
