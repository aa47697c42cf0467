// The backend-neutral op API. Each op has one CPU definition in engine/cpu/ (namespace
// vitune::cpu: the fp32/fp64 reference) and, in CUDA builds, one CUDA definition in
// engine/cuda/ (namespace vitune::cuda) with the same signature; the vitune::ops
// functions (engine/ops.cpp) dispatch on the device of the first tensor argument, and
// each backend refuses tensors on another device with an error naming the op. The
// signatures are written once, in engine/op_signatures.inc.
//
// Conventions: tensors are dense row-major; float ops accept f32 and f64 (f64 exists
// for finite-difference checks) and all float arguments of one call share a dtype.
// "rows" of a tensor means its flattening to [numel / last_dim, last_dim].
// Outputs named `accumulate` are added to (+=), so gradients sum over uses.
#pragma once

#include <cstdint>

#include "engine/tensor.h"

namespace vitune {

// The scalars of one SGD step (nn/optimizer.h documents them).
struct SgdUpdate {
  float lr = 0, momentum = 0, weight_decay = 0;
  bool nesterov = false;
  bool first = false;  // the first step: the momentum buffer starts as d
};

// The scalars of AdamW step `step` (1-based), derived once in double on the host so
// that both backends use the same float values.
struct AdamWUpdate {
  float decay = 1;       // 1 - lr * weight_decay
  float beta1 = 0, beta2 = 0, eps = 0;
  float step_size = 0;   // lr / (1 - beta1^step)
  float bias2_sqrt = 1;  // sqrt(1 - beta2^step)
};
AdamWUpdate adamw_scalars(double lr, double beta1, double beta2, double eps, double weight_decay,
                          int64_t step);

}  // namespace vitune

namespace vitune::ops {
#include "engine/op_signatures.inc"

// Plain triple loop with the same contract as gemm (2-D only): the test reference.
void gemm_reference(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b,
                    double beta, Tensor& c);
}  // namespace vitune::ops

namespace vitune::cpu {
#include "engine/op_signatures.inc"
}  // namespace vitune::cpu

#if VITUNE_WITH_CUDA
namespace vitune::cuda {
#include "engine/op_signatures.inc"
}  // namespace vitune::cuda
#endif

