// A named model parameter and its freeze state: trainable, frozen, or trainable at a
// set of entries (an element mask kept as sorted flat indices). Freezing is a property
// of the parameter, never of a train/eval mode: nothing in vitune unfreezes silently.
#pragma once

#include <string>

#include "autograd/variable.h"

namespace vitune::nn {

enum class FreezeState { Trainable, Frozen, Masked };
const char* freeze_state_name(FreezeState state);

class Parameter {
 public:
  Parameter(std::string name, Tensor value);
  Parameter(const Parameter&) = delete;
  Parameter& operator=(const Parameter&) = delete;

  const std::string& name() const { return var_.name(); }
  const autograd::Variable& var() const { return var_; }
  const Tensor& value() const { return var_.value(); }
  Tensor& mutable_value() { return var_.mutable_value(); }
  const Tensor& grad() const { return var_.grad(); }
  const Shape& shape() const { return var_.shape(); }
  int64_t numel() const { return var_.value().numel(); }

  FreezeState state() const;
  void train();
  void freeze();
  // Trainable only at these sorted, unique flat indices (i64 vector).
  void train_entries(Tensor sorted_indices);
  const Tensor& mask_indices() const { return var_.grad_indices(); }
  // Entries an optimizer updates: all, none, or the mask's count.
  int64_t trainable_count() const;

  void zero_grad() { var_.zero_grad(); }
  // Moves the value and the mask indices to `device`; drops the gradient.
  void to(Device device);

 private:
  autograd::Variable var_;
};

}  // namespace vitune::nn
