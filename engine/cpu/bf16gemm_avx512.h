// vitune's GEMM with bf16 operands and fp32 accumulation for CPUs with AVX512_BF16: the
// products of bf16 autocast (engine/autocast.h) on such CPUs.
#pragma once

#include <cstdint>

#include "engine/cpu/isa.h"

namespace vitune::cpu {

// Row-major C = alpha op(A) op(B) + beta C, with every element of the f32 operands A and
// B rounded to bf16 (to nearest even, as round_to_bf16) and the products summed in fp32
// (vdpbf16ps: operands below 2^-126 in magnitude count as zero, products that underflow
// too); C is f32. Spread over the thread pool; every element of C is summed in the same
// order for any thread count. Runs only where cpu_isa() >= Isa::Avx512Bf16.
void bf16gemm_avx512(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                     int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace vitune::cpu
