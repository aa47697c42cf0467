// SGD and AdamW updates of a parameter's trainable entries on CUDA (engine/ops.h). One
// thread per updated entry i, which reads and writes value.flat[indices[i]] (or
// value.flat[i] without indices) and slot i of the gradient and the state buffers, by
// the rules the CPU uses too (engine/optimizer_rules.h).
#include <cstdint>
#include <initializer_list>

#include "engine/cuda/cuda_context.h"
#include "engine/op_checks.h"
#include "engine/ops.h"
#include "engine/optimizer_rules.h"

namespace vitune::cuda {

namespace {

// Checks the f32 operands of an update (all on one CUDA device) and returns the device.
int update_operands(const Tensor& value, const Tensor* indices, const Tensor& grad,
                    std::initializer_list<const Tensor*> state, const char* op) {
  op_checks::check_update_operands(value, indices, grad, state, op, check_on_cuda);
  const int device = same_device({&value, &grad}, op);
  if (indices) same_device({&value, indices}, op);
  for (const Tensor* s : state) same_device({&value, s}, op);
  return device;
}

// One thread per updated entry, by the rules of engine/optimizer_rules.h. `buffer` may
// be null.
__global__ void sgd_kernel(float* p_all, const int64_t* index, const float* g, float* buffer,
                           int64_t count, SgdUpdate u) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    sgd_entry(p_all[index ? index[i] : i], g[i], buffer ? buffer + i : nullptr, u);
  }
}

__global__ void adamw_kernel(float* p_all, const int64_t* index, const float* g, float* m1,
                             float* m2, int64_t count, AdamWUpdate u) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    adamw_entry(p_all[index ? index[i] : i], g[i], m1[i], m2[i], u);
  }
}

}  // namespace

void sgd_update(Tensor& value, const Tensor* indices, const Tensor& grad, Tensor* momentum_buffer,
                const SgdUpdate& update) {
  const char* op = "sgd_update";
  const int device = momentum_buffer
                         ? update_operands(value, indices, grad, {momentum_buffer}, op)
                         : update_operands(value, indices, grad, {}, op);
  const int64_t count = grad.numel();
  if (count == 0) return;
  sgd_kernel<<<blocks_for(count), kThreads, 0, stream(device)>>>(
      value.kernel_data<float>(), indices ? indices->kernel_data<int64_t>() : nullptr, grad.kernel_data<float>(),
      momentum_buffer ? momentum_buffer->kernel_data<float>() : nullptr, count, update);
  check_launch("sgd_kernel");
}

void adamw_update(Tensor& value, const Tensor* indices, const Tensor& grad, Tensor& m, Tensor& v,
                  const AdamWUpdate& update) {
  const char* op = "adamw_update";
  const int device = update_operands(value, indices, grad, {&m, &v}, op);
  const int64_t count = grad.numel();
  if (count == 0) return;
  adamw_kernel<<<blocks_for(count), kThreads, 0, stream(device)>>>(
      value.kernel_data<float>(), indices ? indices->kernel_data<int64_t>() : nullptr, grad.kernel_data<float>(),
      m.kernel_data<float>(), v.kernel_data<float>(), count, update);
  check_launch("adamw_kernel");
}

}  // namespace vitune::cuda
