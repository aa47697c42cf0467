// Argument checks shared by the CPU kernels: the tensors are in host memory (on the cpu
// or the emulated device; a tensor on a CUDA device among them means operands on two
// devices), have a float dtype, agree with each other. Each failure names the op and
// what it was given.
#pragma once

#include <string>
#include <utility>

#include "engine/tensor.h"

namespace vitune::cpu {

inline void check_host(const Tensor& t, const char* op) {
  VITUNE_CHECK(t.defined(), op, ": an argument is an undefined tensor");
  VITUNE_CHECK(t.device().host_memory(), op, ": tensor ", t.str(), " is on ", t.device().str(),
               " while the op runs on the CPU: move every operand to one device first");
}

inline void check_float(const Tensor& t, const char* op) {
  check_host(t, op);
  VITUNE_CHECK(t.dtype() == DType::F32 || t.dtype() == DType::F64, op,
               ": expected an f32 or f64 tensor, got ", t.str());
}

inline void check_same(const Tensor& a, const Tensor& b, const char* op) {
  VITUNE_CHECK(a.shape() == b.shape() && a.dtype() == b.dtype(), op, ": tensors ", a.str(), " and ",
               b.str(), " differ in shape or dtype");
}

// The operands of a backward pass: x is a float tensor on the host and dy, the gradient
// with respect to the output, has x's shape and dtype.
inline void check_output_grad(const Tensor& dy, const Tensor& x, const char* op) {
  check_float(x, op);
  check_host(dy, op);
  check_same(dy, x, op);
}

// Calls f(float{}) or f(double{}) after the dtype of t, a float tensor in host memory.
template <typename F>
auto dispatch_float(const Tensor& t, const char* op, F&& f) {
  check_host(t, op);
  return on_float_dtype(t, op, std::forward<F>(f));
}

}  // namespace vitune::cpu
