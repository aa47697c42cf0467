// The tape. A Variable holds a value, an optional gradient and the node that made it.
// A node exists only when grad mode is on and one of its inputs requires a gradient, so
// the tape never reaches below the earliest trainable parameter, and a backward never
// computes a gradient that nobody asked for.
//
// Values and the tape. A node holds its inputs as the tape needs them, to send them
// gradients, but not their values: the value of a variable computed by the tape (one
// with a node) is released when the last Variable handle to it goes, and a backward
// that needs a value keeps it itself, as the Tensor it captures (a handle captured whole
// keeps the value too). So an activation that no backward reads, or that one keeps in a
// smaller form (linear under bf16 autocast), is freed once the forward pass drops it.
//
// Gradients of leaves (parameters) accumulate (+=) across backward passes until
// zero_grad. A leaf may be trainable at a subset of its entries: then `grad_indices`
// holds the sorted flat indices and `grad` is a vector of that many values.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace vitune::autograd {

struct Node;
struct ValueHold;

struct VariableImpl {
  Tensor value;                 // undefined once released (see above)
  Shape released_shape;         // a released value's shape, dtype and device: its
  DType released_dtype = DType::F32;  // gradient is still made to match them
  Device released_device;
  Tensor grad;                  // dense like value, or [selected] with grad_indices
  Tensor grad_indices;          // i64 sorted flat indices; undefined = dense
  // With grad_indices, for the value seen as a matrix [dim 0, the rest] (a linear
  // weight [out, in]): the columns the indices touch, in order, and the indices
  // renumbered over those columns alone (j * in + k -> j * u + k's place among them);
  // set only where they are fewer than all columns, else undefined.
  Tensor grad_columns, grad_indices_in_columns;
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;  // null for leaves
  std::string name;
};

using ImplPtr = std::shared_ptr<VariableImpl>;

// One recorded function application: its inputs and its backward closure, which
// receives the gradient of the function's output.
struct Node {
  const char* op = "";
  std::vector<ImplPtr> inputs;
  std::function<void(const Tensor& grad_output)> backward;
};

class Variable {
 public:
  Variable() = default;
  explicit Variable(Tensor value, bool requires_grad = false, std::string name = "");

  bool defined() const { return impl_ != nullptr; }
  const Tensor& value() const { return impl_->value; }
  Tensor& mutable_value() const { return impl_->value; }
  const Tensor& grad() const { return impl_->grad; }
  bool requires_grad() const { return impl_ && impl_->requires_grad; }
  bool is_leaf() const { return impl_->grad_fn == nullptr; }
  const std::string& name() const { return impl_->name; }
  const Shape& shape() const { return impl_->value.shape(); }
  const ImplPtr& impl() const { return impl_; }
  // This variable as the tape holds it, for a backward closure that only sends it a
  // gradient: it does not keep the value alive, and its value() is undefined once every
  // handle has gone.
  Variable on_tape() const;

  void set_requires_grad(bool requires_grad);
  // Trainable only at these sorted, unique flat indices (i64); the gradient becomes a
  // vector of their values. An undefined tensor makes the leaf dense again.
  void set_grad_indices(Tensor indices);
  const Tensor& grad_indices() const { return impl_->grad_indices; }
  const Tensor& grad_columns() const { return impl_->grad_columns; }
  const Tensor& grad_indices_in_columns() const { return impl_->grad_indices_in_columns; }
  // Drops the gradient; the next backward starts from zero.
  void zero_grad() const;

 private:
  ImplPtr impl_;                     // declared first, so it outlives hold_
  std::shared_ptr<ValueHold> hold_;  // shared by the handles; null on the tape's copies
};

// Grad mode: on by default, per thread. NoGradGuard turns it off for its scope.
bool grad_enabled();
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Runs the tape backwards from `root`. With no seed, root must have one element and
// its gradient is 1. The graph is consumed: saved tensors are freed as nodes finish.
void backward(const Variable& root, const Tensor& seed = Tensor());

// ---- For the functions that build the tape ------------------------------------------

// Wraps a forward result: attaches a node with `backward` when grad mode is on and any
// input requires a gradient; otherwise the result is a constant.
Variable make_result(Tensor value, std::vector<Variable> inputs, const char* op,
                     std::function<void(const Tensor& grad_output)> backward);

// Whether the gradient of `v` is wanted in this backward.
inline bool needs_grad(const Variable& v) { return v.defined() && v.requires_grad(); }

// Where a backward puts the gradient of one input. Every differentiable function hands
// its input gradients over through these two, which alone know the three destinations:
//   a dense leaf     its own gradient buffer, added into (+=) where the kernel allows it,
//                    so no temporary is made;
//   a masked leaf    only its selected entries: formed directly where the function can
//                    (linear's weight), else gathered out of a dense temporary;
//   an inner node    a temporary, combined with what other uses of the value send.
// Gradient buffers and temporaries are made on the device of the input's value.

// Adds `g` (dense, shaped like v's value, on its device) to v's gradient.
void accumulate_grad(const Variable& v, const Tensor& g);

// The destination of v's gradient for a kernel that writes it: `dense()` is a tensor
// shaped like v's value that the kernel sets to beta() * dense() + gradient. For a dense
// leaf that is its buffer with beta 1; otherwise an uninitialised temporary with beta 0,
// which `commit()` hands over. A masked leaf offers `selected()` too, for a function
// that can add the selected entries directly (then dense() is never made).
class GradientSlot {
 public:
  explicit GradientSlot(Variable v);
  GradientSlot(const GradientSlot&) = delete;
  GradientSlot& operator=(const GradientSlot&) = delete;

  // Whether v's gradient is wanted at all (nothing below may be called otherwise).
  bool wanted() const { return wanted_; }
  // For an element-masked leaf: its [selected] gradient buffer (zeros on first use) and
  // the sorted flat indices; null for every other input.
  Tensor* selected();
  // The tensor to write or add the gradient into, and the beta to use.
  Tensor& dense();
  double beta();
  // dense(), zeroed when it is a fresh temporary: for kernels that can only add (+=).
  Tensor& accumulator();
  // Hands a temporary over to v (nothing to do for a dense leaf's own buffer).
  void commit();

 private:
  Variable v_;
  bool wanted_ = false;
  bool own_buffer_ = false;  // dense() is the leaf's buffer, not a temporary
  Tensor temporary_;
};

}  // namespace vitune::autograd
