// SGD and AdamW updates of a parameter's trainable entries on the host (engine/ops.h),
// by the rules of engine/optimizer_rules.h.
#include "engine/cpu/check.h"
#include "engine/cpu/isa.h"
#include "engine/op_checks.h"
#include "engine/ops.h"
#include "engine/optimizer_rules.h"

namespace vitune::cpu {

namespace {

// Checks the f32 operands of an update and returns the indices pointer (or null).
const int64_t* update_operands(const Tensor& value, const Tensor* indices, const Tensor& grad,
                               std::initializer_list<const Tensor*> state, const char* op) {
  op_checks::check_update_operands(value, indices, grad, state, op, check_host);
  return indices ? indices->kernel_data<int64_t>() : nullptr;
}

}  // namespace

void sgd_update(Tensor& value, const Tensor* indices, const Tensor& grad, Tensor* momentum_buffer,
                const SgdUpdate& u) {
  const int64_t* index = momentum_buffer ? update_operands(value, indices, grad, {momentum_buffer}, "sgd_update")
                                         : update_operands(value, indices, grad, {}, "sgd_update");
  float* p_all = value.kernel_data<float>();
  const float* g = grad.kernel_data<float>();
  float* buffer = momentum_buffer ? momentum_buffer->kernel_data<float>() : nullptr;
  parallel_for_simd(grad.numel(), 4096, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      sgd_entry(p_all[index ? index[i] : i], g[i], buffer ? buffer + i : nullptr, u);
    }
  });
}

void adamw_update(Tensor& value, const Tensor* indices, const Tensor& grad, Tensor& m, Tensor& v,
                  const AdamWUpdate& u) {
  const int64_t* index = update_operands(value, indices, grad, {&m, &v}, "adamw_update");
  float* p_all = value.kernel_data<float>();
  const float* g = grad.kernel_data<float>();
  float* m1 = m.kernel_data<float>();
  float* m2 = v.kernel_data<float>();
  parallel_for_simd(grad.numel(), 4096, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      adamw_entry(p_all[index ? index[i] : i], g[i], m1[i], m2[i], u);
    }
  });
}

}  // namespace vitune::cpu
