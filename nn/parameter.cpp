// Freeze states of a parameter, kept in its leaf Variable.
#include "nn/parameter.h"

namespace vitune::nn {

const char* freeze_state_name(FreezeState state) {
  switch (state) {
    case FreezeState::Trainable: return "trainable";
    case FreezeState::Frozen: return "frozen";
    case FreezeState::Masked: return "masked";
  }
  return "?";
}

Parameter::Parameter(std::string name, Tensor value) : var_(std::move(value), true, std::move(name)) {}

FreezeState Parameter::state() const {
  if (!var_.requires_grad()) return FreezeState::Frozen;
  return var_.grad_indices().defined() ? FreezeState::Masked : FreezeState::Trainable;
}

void Parameter::train() {
  var_.set_grad_indices(Tensor());
  var_.set_requires_grad(true);
}

void Parameter::freeze() {
  var_.set_grad_indices(Tensor());
  var_.set_requires_grad(false);
}

void Parameter::train_entries(Tensor sorted_indices) {
  var_.set_requires_grad(true);
  var_.set_grad_indices(std::move(sorted_indices));
}

void Parameter::to(Device device) {
  var_.mutable_value() = var_.value().to(device);
  if (state() == FreezeState::Masked) var_.set_grad_indices(mask_indices());
  var_.zero_grad();
}

int64_t Parameter::trainable_count() const {
  switch (state()) {
    case FreezeState::Trainable: return numel();
    case FreezeState::Frozen: return 0;
    case FreezeState::Masked: return mask_indices().numel();
  }
  return 0;
}

}  // namespace vitune::nn
