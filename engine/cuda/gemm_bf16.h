// The CUDA side of bf16 autocast (engine/autocast.h): GEMMs whose f32 operands are
// converted to bfloat16 and multiplied by cuBLAS on tensor cores with fp32 accumulation
// and an fp32 output, and the conversion itself. vitune::ops::gemm and gemm_batched call
// these for f32 operands on a CUDA device while autocast is on. Host-side declarations
// only, so engine/ops.cpp may include it in CUDA builds.
#pragma once

#include "engine/tensor.h"

namespace vitune::cuda {

// The contracts of ops::gemm and ops::gemm_batched for f32 tensors on one CUDA device,
// with op(a) and op(b) rounded to bfloat16 (nearest even) before the product.
void gemm_bf16(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b, double beta,
               Tensor& c);
void gemm_batched_bf16(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b, double beta,
                       Tensor& c);

// A DType::BF16 tensor of x's shape on x's device holding each value of the f32 CUDA
// tensor x rounded to the nearest bfloat16 (the rounding of round_to_bf16).
Tensor to_bf16_storage(const Tensor& x);

}  // namespace vitune::cuda
