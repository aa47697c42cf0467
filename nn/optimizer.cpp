// The parameter walk shared by every optimizer, and the SGD and AdamW entry updates.
#include "nn/optimizer.h"

#include <cmath>

#include "engine/parallel.h"

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
      for (int s = 0; s < slots(); ++s) state.buffers.push_back(Tensor::zeros({count}));
    }
    const int64_t* index = p->state() == FreezeState::Masked ? p->mask_indices().data<int64_t>() : nullptr;
    update(p->mutable_value().data<float>(), index, grad.data<float>(), count, state.buffers,
           ++state.steps);
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
    out.emplace_back(base + ".steps", Tensor::from_vector<int64_t>({1}, {it->second.steps}));
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
      state.buffers.push_back(buffer->second.clone());
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

void Sgd::update(float* value, const int64_t* index, const float* grad, int64_t count,
                 std::vector<Tensor>& state, int64_t step) {
  const float lr = float(lr_), momentum = float(options_.momentum), wd = float(options_.weight_decay);
  const bool first = step == 1;
  float* buffer = state.empty() ? nullptr : state[0].data<float>();
  parallel_for(count, 4096, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float& p = value[index ? index[i] : i];
      float d = grad[i] + wd * p;
      if (buffer) {
        buffer[i] = first ? d : momentum * buffer[i] + d;
        d = options_.nesterov ? d + momentum * buffer[i] : buffer[i];
      }
      p -= lr * d;
    }
  });
}

AdamW::AdamW(std::vector<Parameter*> parameters, const AdamWOptions& options)
    : Optimizer(std::move(parameters), options.lr), options_(options) {
  VITUNE_CHECK(options.lr >= 0 && options.weight_decay >= 0 && options.eps >= 0,
               "AdamW: lr, eps and weight decay must be non-negative");
  VITUNE_CHECK(options.beta1 >= 0 && options.beta1 < 1 && options.beta2 >= 0 && options.beta2 < 1,
               "AdamW: betas must be in [0, 1)");
}

void AdamW::update(float* value, const int64_t* index, const float* grad, int64_t count,
                   std::vector<Tensor>& state, int64_t step) {
  const double t = double(step);
  const float decay = float(1.0 - lr_ * options_.weight_decay);
  const float b1 = float(options_.beta1), b2 = float(options_.beta2), eps = float(options_.eps);
  const float step_size = float(lr_ / (1.0 - std::pow(options_.beta1, t)));
  const float bias2_sqrt = float(std::sqrt(1.0 - std::pow(options_.beta2, t)));
  float* m = state[0].data<float>();
  float* v = state[1].data<float>();
  parallel_for(count, 4096, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float& p = value[index ? index[i] : i];
      float g = grad[i];
      p *= decay;
      m[i] += (g - m[i]) * (1.0f - b1);
      v[i] = v[i] * b2 + (1.0f - b2) * g * g;
      p -= step_size * m[i] / (std::sqrt(v[i]) / bias2_sqrt + eps);
    }
  });
}

}  // namespace vitune::nn
