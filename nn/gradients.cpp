// Global and per-component gradient norms, and clipping.
#include "nn/gradients.h"

#include <cmath>

#include "engine/ops.h"

namespace vitune::nn {

namespace {
double squared_norm(const Parameter& p) { return p.grad().defined() ? ops::sum_squares(p.grad()) : 0.0; }
}  // namespace

double global_grad_norm(const std::vector<Parameter*>& parameters) {
  double sum = 0;
  for (const Parameter* p : parameters) sum += squared_norm(*p);
  return std::sqrt(sum);
}

double clip_grad_norm(const std::vector<Parameter*>& parameters, double max_norm) {
  VITUNE_CHECK(max_norm > 0, "gradient clipping: the maximum norm must be positive, got ", max_norm);
  double norm = global_grad_norm(parameters);
  double coefficient = max_norm / (norm + 1e-6);
  if (coefficient < 1.0) {
    for (Parameter* p : parameters) {
      if (!p->grad().defined()) continue;
      Tensor grad = p->grad();  // shares the parameter's gradient bytes
      grad.copy_from(ops::scale(grad, coefficient));
    }
  }
  return norm;
}

GradNorms grad_norms(const std::vector<Parameter*>& parameters) {
  GradNorms norms;
  double total = 0;
  for (const Parameter* p : parameters) {
    double sq = squared_norm(*p);
    Component component = component_of(p->name());
    norms.per_component[component] += sq;
    int block = block_of(p->name());
    if (block >= 0) norms.per_layer[block][component] += sq;
    total += sq;
  }
  for (auto& [component, value] : norms.per_component) value = std::sqrt(value);
  for (auto& [block, components] : norms.per_layer) {
    for (auto& [component, value] : components) value = std::sqrt(value);
  }
  norms.total = std::sqrt(total);
  return norms;
}

}  // namespace vitune::nn
