// The parameter walk shared by every optimizer, and the SGD and AdamW entry updates.
#include "nn/optimizer.h"

#include "engine/ops.h"

namespace vitune::nn {

Optimizer::Optimizer(std::vector<Parameter*> parameters, double lr)
    : lr_(lr), parameters_(std::move(parameters)) {}

void Optimizer::step() {
  ++steps_;
  for (Parameter* p : parameters_) {
    if (p->state() == FreezeState::Frozen) {
      state_.erase(p);
      continue;
    }
    const Tensor& grad = p->grad();
    if (!grad.defined()) continue;
    int64_t count = p->trainable_count();
    VITUNE_CHECK(grad.numel() == count && grad.dtype() == DType::F32, "optimizer: gradient ",
                 grad.str(), " of '", p->name(), "' does not match its ", count, " trainable entries");
    ParameterState& state = state_[p];
    if (state.buffers.empty() || state.buffers[0].numel() != count) {
      // First update, or the selection changed: the state starts afresh.
      state = ParameterState();
      const Device device = p->value().device();
      for (int s = 0; s < slots(); ++s) state.buffers.push_back(Tensor::zeros({count}, DType::F32, device));
    }
    const Tensor* indices = p->state() == FreezeState::Masked ? &p->mask_indices() : nullptr;
    update(p->mutable_value(), indices, grad, state.buffers, ++state.steps);
  }
}

void Optimizer::zero_grad() {
  for (Parameter* p : parameters_) p->zero_grad();
}

int64_t Optimizer::state_bytes() const {
  int64_t bytes = 0;
  for (const auto& [param, state] : state_) {
    for (const Tensor& t : state.buffers) bytes += int64_t(t.nbytes());
  }
  return bytes;
}

void Optimizer::export_state(const std::string& prefix,
                             std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const Parameter* p : parameters_) {
    auto it = state_.find(p);
    if (it == state_.end()) continue;
    const std::string base = prefix + p->name();
    for (size_t s = 0; s < it->second.buffers.size(); ++s) {
      out.emplace_back(base + ".slot" + std::to_string(s), it->second.buffers[s]);
    }
    out.emplace_back(base + ".steps", Tensor::from_vector<int64_t>({1}, {it->second.steps}, Device::cpu()));
  }
}

void Optimizer::import_state(const std::string& prefix, const std::map<std::string, Tensor>& tensors,
                             const std::string& source) {
  state_.clear();
  for (const Parameter* p : parameters_) {
    const std::string base = prefix + p->name();
    auto steps = tensors.find(base + ".steps");
    if (steps == tensors.end()) continue;  // no state yet for this parameter
    VITUNE_CHECK(steps->second.dtype() == DType::I64 && steps->second.numel() == 1, source, ": tensor '",
                 base, ".steps' must be i64[1], got ", steps->second.str());
    ParameterState state;
    state.steps = steps->second.data<int64_t>()[0];
    for (int s = 0; s < slots(); ++s) {
      const std::string name = base + ".slot" + std::to_string(s);
      auto buffer = tensors.find(name);
      VITUNE_CHECK(buffer != tensors.end(), source, ": missing optimizer tensor '", name, "'");
      VITUNE_CHECK(buffer->second.dtype() == DType::F32 && buffer->second.ndim() == 1 &&
                       buffer->second.numel() == p->trainable_count(),
                   source, ": optimizer tensor '", name, "' is ", buffer->second.str(), ", expected f32[",
                   p->trainable_count(), "] for the parameter's trainable entries");
      state.buffers.push_back(buffer->second.to(p->value().device()).clone());
    }
    state_[p] = std::move(state);
  }
}

Sgd::Sgd(std::vector<Parameter*> parameters, const SgdOptions& options)
    : Optimizer(std::move(parameters), options.lr), options_(options) {
  VITUNE_CHECK(options.lr >= 0 && options.momentum >= 0 && options.weight_decay >= 0,
               "SGD: lr, momentum and weight decay must be non-negative");
  VITUNE_CHECK(!options.nesterov || options.momentum > 0, "SGD: Nesterov needs a positive momentum");
}

void Sgd::update(Tensor& value, const Tensor* indices, const Tensor& grad, std::vector<Tensor>& state,
                 int64_t step) {
  SgdUpdate u;
  u.lr = float(lr_);
  u.momentum = float(options_.momentum);
  u.weight_decay = float(options_.weight_decay);
  u.nesterov = options_.nesterov;
  u.first = step == 1;
  ops::sgd_update(value, indices, grad, state.empty() ? nullptr : &state[0], u);
}

AdamW::AdamW(std::vector<Parameter*> parameters, const AdamWOptions& options)
    : Optimizer(std::move(parameters), options.lr), options_(options) {
  VITUNE_CHECK(options.lr >= 0 && options.weight_decay >= 0 && options.eps >= 0,
               "AdamW: lr, eps and weight decay must be non-negative");
  VITUNE_CHECK(options.beta1 >= 0 && options.beta1 < 1 && options.beta2 >= 0 && options.beta2 < 1,
               "AdamW: betas must be in [0, 1)");
}

void AdamW::update(Tensor& value, const Tensor* indices, const Tensor& grad, std::vector<Tensor>& state,
                   int64_t step) {
  ops::adamw_update(value, indices, grad, state[0], state[1],
                    adamw_scalars(lr_, options_.beta1, options_.beta2, options_.eps, options_.weight_decay, step));
}

}  // namespace vitune::nn
