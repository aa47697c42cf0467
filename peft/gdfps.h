// GD-FPS scores (Growth-Driven Feedforward Parameter Selection). For a linear weight
// W [out, in] whose input feature k has mean |a_k| `down_k` on the task data and
// `anchor_k` on the pretraining data (the prior anchor):
//   growth_k    = down_k / anchor_k - 1
//   score[j, k] = |W[j, k]| * growth_k
// The score is signed: a feature that is weaker on the task than in pretraining scores
// below zero, so its weights rank after every weight of a growing feature.
// Zero anchor: 0/0 is taken as no growth (growth 0); down_k > 0 over anchor_k = 0 is
// an unbounded growth (+inf), whose scores are +inf (or NaN where W is 0), and the
// selection never picks a non-finite score. docs/gdfps.md explains both choices.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/tensor.h"
#include "nn/vit.h"
#include "peft/anchor.h"
#include "peft/selection.h"

namespace vitune::peft {

// growth_k as above; down and anchor f64 [in], finite and >= 0, on any device. The
// result is on the host, like everything below: a layer's scores are small.
Tensor feature_growth(const Tensor& down, const Tensor& anchor);

// f64 [out, in]: |W[j, k]| * growth_k, where `weight` is read as [out, in] (a patch
// weight [D, C, p, p] as [D, C*p*p]) and growth is f64 [in]; the weight may be on a
// CUDA device (it is copied to the host once).
Tensor gdfps_scores(const Tensor& weight, const Tensor& growth);

// GD-FPS selection of the named weights of `model` (each a measured layer): the scores
// from the task statistics `down` (ActivationStats::means()) and the anchor, then the
// top K of each row. One tensor's scores are held at a time.
std::vector<TensorSelection> gdfps_select(const nn::VisionTransformer& model, const std::vector<std::string>& names,
                                          const Anchor& anchor, const std::vector<std::pair<std::string, Tensor>>& down,
                                          int64_t k);

}  // namespace vitune::peft
