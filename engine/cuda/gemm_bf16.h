// The conversion behind the CUDA side of bf16 autocast (engine/autocast.h): the bf16
// GEMMs (cuda::gemm_bf16 and gemm_batched_bf16 of engine/op_signatures.inc) multiply
// bf16 copies of their f32 operands made by this function.
#pragma once

#include "engine/tensor.h"

namespace vitune::cuda {

// A DType::BF16 tensor of x's shape on x's device holding each value of the f32 CUDA
// tensor x rounded to the nearest bfloat16 (the rounding of round_to_bf16).
Tensor to_bf16_storage(const Tensor& x);

}  // namespace vitune::cuda
