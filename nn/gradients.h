// Gradient bookkeeping of a training step: the global norm, clipping by it (as
// PyTorch's clip_grad_norm_), and norms per component type and per layer for the logs.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "nn/components.h"
#include "nn/parameter.h"

namespace vitune::nn {

// sqrt of the sum of squares of every gradient entry (in double, parameters in order).
double global_grad_norm(const std::vector<Parameter*>& parameters);

// Scales every gradient by max_norm / (norm + 1e-6) when the global norm exceeds
// max_norm. Returns the norm before clipping.
double clip_grad_norm(const std::vector<Parameter*>& parameters, double max_norm);

struct GradNorms {
  std::map<Component, double> per_component;            // over all layers
  std::map<int, std::map<Component, double>> per_layer;  // block index -> component
  double total = 0;
};
GradNorms grad_norms(const std::vector<Parameter*>& parameters);

}  // namespace vitune::nn
