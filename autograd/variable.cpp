// Variables, grad mode, gradient accumulation and the backward traversal.
#include "autograd/variable.h"

#include <unordered_set>
#include <vector>

#include "engine/ops.h"

namespace vitune::autograd {

namespace {
thread_local bool grad_mode_enabled = true;
}

// What the handles of one variable share: when the last goes, the value of a variable
// on the tape is released (a leaf's stays with it: leaves are the model's parameters and
// the inputs).
struct ValueHold {
  std::weak_ptr<VariableImpl> impl;
  ~ValueHold() {
    const ImplPtr held = impl.lock();
    if (!held || !held->grad_fn || !held->value.defined()) return;
    held->released_shape = held->value.shape();
    held->released_dtype = held->value.dtype();
    held->released_device = held->value.device();
    held->value = Tensor();
  }
};

Variable::Variable(Tensor value, bool requires_grad, std::string name)
    : impl_(std::make_shared<VariableImpl>()), hold_(std::make_shared<ValueHold>()) {
  impl_->value = std::move(value);
  impl_->requires_grad = requires_grad;
  impl_->name = std::move(name);
  hold_->impl = impl_;
}

Variable Variable::on_tape() const {
  Variable tape_copy;
  tape_copy.impl_ = impl_;
  return tape_copy;
}

void Variable::set_requires_grad(bool requires_grad) {
  VITUNE_CHECK(is_leaf(), "set_requires_grad on '", name(), "': only leaves can change it");
  impl_->requires_grad = requires_grad;
  if (!requires_grad) impl_->grad = Tensor();
}

namespace {

// The columns that the sorted flat indices `p` [count] touch in a matrix [rows, columns],
// and the indices renumbered over those columns alone; both undefined where every column
// is touched. On `device`.
void columns_touched(const int64_t* p, int64_t count, int64_t columns, Device device, Tensor& touched,
                     Tensor& renumbered) {
  std::vector<int64_t> place(size_t(columns), -1), used;
  for (int64_t i = 0; i < count; ++i) place[size_t(p[i] % columns)] = 0;
  for (int64_t k = 0; k < columns; ++k) {
    if (place[size_t(k)] < 0) continue;
    place[size_t(k)] = int64_t(used.size());
    used.push_back(k);
  }
  const int64_t u = int64_t(used.size());
  if (u == columns) {
    touched = renumbered = Tensor();
    return;
  }
  std::vector<int64_t> indices(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) indices[size_t(i)] = p[i] / columns * u + place[size_t(p[i] % columns)];
  touched = Tensor::from_vector<int64_t>({u}, used, device);
  renumbered = Tensor::from_vector<int64_t>({count}, indices, device);
}

}  // namespace

void Variable::set_grad_indices(Tensor indices) {
  VITUNE_CHECK(is_leaf(), "set_grad_indices on '", name(), "': only leaves can be masked");
  impl_->grad_columns = impl_->grad_indices_in_columns = Tensor();
  if (indices.defined()) {
    VITUNE_CHECK(indices.dtype() == DType::I64 && indices.ndim() == 1, "grad indices of '", name(),
                 "': expected an i64 vector, got ", indices.str());
    const Tensor host = indices.to(Device::cpu());
    const int64_t* p = host.data<int64_t>();
    for (int64_t i = 0; i < indices.numel(); ++i) {
      VITUNE_CHECK(p[i] >= 0 && p[i] < value().numel() && (i == 0 || p[i] > p[i - 1]),
                   "grad indices of '", name(), "': entry ", i, " (", p[i],
                   ") is out of range or not sorted and unique (", value().numel(), " elements)");
    }
    if (value().ndim() >= 2 && value().numel() > 0) {
      columns_touched(p, indices.numel(), value().numel() / value().dim(0), value().device(), impl_->grad_columns,
                      impl_->grad_indices_in_columns);
    }
  }
  // The indices live where the value does: the masked gradient and update use both.
  impl_->grad_indices = indices.defined() ? indices.to(value().device()) : std::move(indices);
  impl_->grad = Tensor();
}

void Variable::zero_grad() const { impl_->grad = Tensor(); }

bool grad_enabled() { return grad_mode_enabled; }

NoGradGuard::NoGradGuard() : previous_(grad_mode_enabled) { grad_mode_enabled = false; }
NoGradGuard::~NoGradGuard() { grad_mode_enabled = previous_; }

Variable make_result(Tensor value, std::vector<Variable> inputs, const char* op,
                     std::function<void(const Tensor& grad_output)> backward) {
  bool any = false;
  for (const Variable& v : inputs) any = any || needs_grad(v);
  if (!any || !grad_mode_enabled) return Variable(std::move(value));
  auto node = std::make_shared<Node>();
  node->op = op;
  for (const Variable& v : inputs) node->inputs.push_back(v.impl());
  node->backward = std::move(backward);
  Variable result(std::move(value), true);
  result.impl()->grad_fn = std::move(node);
  return result;
}

namespace {

const Shape& value_shape(const VariableImpl& impl) {
  return impl.value.defined() ? impl.value.shape() : impl.released_shape;
}

// A new, uninitialised tensor shaped like impl's value, of its dtype, on its device,
// also when the value has been released.
Tensor like_value(const VariableImpl& impl) {
  if (impl.value.defined()) return Tensor::like(impl.value, impl.value.shape());
  return Tensor(impl.released_shape, impl.released_dtype, impl.released_device);
}

// A dense leaf's gradient buffer (zeros on first use); null for other variables.
Tensor* dense_leaf_grad(VariableImpl& impl) {
  if (impl.grad_fn || impl.grad_indices.defined()) return nullptr;
  if (!impl.grad.defined()) impl.grad = Tensor::zeros_like(impl.value);
  return &impl.grad;
}

// An element-masked leaf's [selected] gradient buffer (zeros on first use); null for
// other variables.
Tensor* masked_leaf_grad(VariableImpl& impl) {
  if (impl.grad_fn || !impl.grad_indices.defined()) return nullptr;
  if (!impl.grad.defined()) impl.grad = Tensor::zeros({impl.grad_indices.numel()}, impl.value.dtype(), impl.value.device());
  return &impl.grad;
}

}  // namespace

void accumulate_grad(const Variable& v, const Tensor& g) {
  VariableImpl& impl = *v.impl();
  VITUNE_CHECK(g.shape() == value_shape(impl), "gradient ", g.str(), " for '", impl.name,
               "' whose value has shape ", shape_str(value_shape(impl)));
  if (Tensor* sparse = masked_leaf_grad(impl)) {
    ops::axpy(1.0, ops::gather(g, impl.grad_indices), *sparse);
  } else if (Tensor* dense = dense_leaf_grad(impl)) {
    ops::axpy(1.0, g, *dense);
  } else {
    // Inner node: gradients are combined out of place, so one tensor may safely be
    // handed to several inputs (add passes its gradient through unchanged).
    impl.grad = impl.grad.defined() ? ops::add(impl.grad, g) : g;
  }
}

GradientSlot::GradientSlot(Variable v) : v_(std::move(v)), wanted_(needs_grad(v_)) {}

Tensor* GradientSlot::selected() { return wanted_ ? masked_leaf_grad(*v_.impl()) : nullptr; }

Tensor& GradientSlot::dense() {
  VITUNE_CHECK(wanted_, "a gradient slot of '", v_.name(), "' that no one asked for was written");
  if (own_buffer_) return v_.impl()->grad;
  if (!temporary_.defined()) {
    if (Tensor* buffer = dense_leaf_grad(*v_.impl())) {
      own_buffer_ = true;
      return *buffer;
    }
    temporary_ = like_value(*v_.impl());
  }
  return temporary_;
}

double GradientSlot::beta() {
  dense();
  return own_buffer_ ? 1.0 : 0.0;
}

Tensor& GradientSlot::accumulator() {
  const bool fresh = !own_buffer_ && !temporary_.defined();
  Tensor& destination = dense();
  if (fresh && !own_buffer_) destination.zero();
  return destination;
}

void GradientSlot::commit() {
  if (temporary_.defined()) accumulate_grad(v_, temporary_);
  temporary_ = Tensor();
}

void backward(const Variable& root, const Tensor& seed) {
  VITUNE_CHECK(root.defined() && root.requires_grad(),
               "backward from a value that does not depend on any trainable parameter");
  // Post-order depth-first walk over nodes; its reverse is a topological order. The
  // order holds owning pointers: finishing a node releases its inputs.
  std::vector<ImplPtr> order;
  std::unordered_set<const VariableImpl*> visited;
  std::vector<std::pair<ImplPtr, size_t>> stack{{root.impl(), 0}};
  visited.insert(root.impl().get());
  while (!stack.empty()) {
    const Node* node = stack.back().first->grad_fn.get();
    size_t& next = stack.back().second;
    if (node && next < node->inputs.size()) {
      const ImplPtr& input = node->inputs[next++];
      if (input && input->requires_grad && input->grad_fn && visited.insert(input.get()).second) {
        stack.emplace_back(input, 0);
      }
      continue;
    }
    order.push_back(std::move(stack.back().first));
    stack.pop_back();
  }

  if (seed.defined()) {
    VITUNE_CHECK(seed.shape() == root.shape(), "backward seed ", seed.str(), " for a root of shape ",
                 shape_str(root.shape()));
    root.impl()->grad = seed;
  } else {
    VITUNE_CHECK(root.value().numel() == 1, "backward without a seed needs a one-element root, got ",
                 root.value().str());
    root.impl()->grad = Tensor::full(root.shape(), 1.0, root.value().dtype(), root.value().device());
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    VariableImpl* impl = it->get();
    std::shared_ptr<Node> node = std::move(impl->grad_fn);
    Tensor grad = std::move(impl->grad);
    impl->grad = Tensor();
    if (grad.defined()) node->backward(grad);
  }
}

}  // namespace vitune::autograd
