// Optimizers over a model's parameters: SGD (momentum, Nesterov, weight decay) and
// AdamW, with PyTorch's update rules. Both honour each parameter's freeze state: a
// frozen parameter has no optimizer state; a parameter trainable at a set of entries has
// state for those entries only, so optimizer memory grows with the selection, not with
// the model. A parameter without a gradient this step is left alone (as PyTorch does).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "nn/parameter.h"

namespace vitune::nn {

class Optimizer {
 public:
  Optimizer(std::vector<Parameter*> parameters, double lr);
  virtual ~Optimizer() = default;

  void step();
  void zero_grad();
  double lr() const { return lr_; }
  void set_lr(double lr) { lr_ = lr; }
  int64_t steps_taken() const { return steps_; }
  // Bytes of optimizer state (momentum and moment buffers) currently held.
  int64_t state_bytes() const;

  // The state as named tensors, for checkpoints that resume exactly:
  // "<prefix><parameter>.slot<i>" (the buffers) and "<prefix><parameter>.steps" (i64 [1]).
  void export_state(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const;
  // Restores what export_state wrote; `source` names the file in errors.
  void import_state(const std::string& prefix, const std::map<std::string, Tensor>& tensors,
                    const std::string& source);

 protected:
  // Updates the trainable entries of one parameter: entry i is value.flat[indices[i]]
  // (every entry when indices is null) with gradient grad[i]; `state` holds slots()
  // buffers of one f32 per entry, on the parameter's device; `step` counts this
  // parameter's updates, 1 on its first.
  virtual void update(Tensor& value, const Tensor* indices, const Tensor& grad, std::vector<Tensor>& state,
                      int64_t step) = 0;
  virtual int slots() const = 0;

  double lr_;
  int64_t steps_ = 0;

 private:
  std::vector<Parameter*> parameters_;
  struct ParameterState {
    int64_t steps = 0;
    std::vector<Tensor> buffers;
  };
  std::map<const Parameter*, ParameterState> state_;
};

struct SgdOptions {
  double lr = 0.01;
  double momentum = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};

// d = g + wd p;  b = m b + d (b = d on the first step);  d = nesterov ? d + m b : b;
// p -= lr d.
class Sgd : public Optimizer {
 public:
  Sgd(std::vector<Parameter*> parameters, const SgdOptions& options);

 private:
  void update(Tensor& value, const Tensor* indices, const Tensor& grad, std::vector<Tensor>& state,
              int64_t step) override;
  int slots() const override { return options_.momentum != 0.0 ? 1 : 0; }
  SgdOptions options_;
};

struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;
};

// p *= 1 - lr wd;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
// p -= (lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) + eps).
class AdamW : public Optimizer {
 public:
  AdamW(std::vector<Parameter*> parameters, const AdamWOptions& options);

 private:
  void update(Tensor& value, const Tensor* indices, const Tensor& grad, std::vector<Tensor>& state,
              int64_t step) override;
  int slots() const override { return 2; }
  AdamWOptions options_;
};

}  // namespace vitune::nn
