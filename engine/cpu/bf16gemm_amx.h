// vitune's GEMM with bf16 operands and fp32 accumulation on AMX (Intel's tile matrix
// unit, TDPBF16PS): the products of bf16 autocast on CPUs that have it.
#pragma once

#include <cstdint>

namespace vitune::cpu {

// Row-major C = alpha op(A) op(B) + beta C, with every element of the f32 operands A and
// B rounded to bf16 (to nearest even, as round_to_bf16) and the products summed in fp32
// (TDPBF16PS: operands below 2^-126 in magnitude count as zero, and so do sums that
// underflow); C is f32 and is not read when beta is 0. Spread over the thread pool;
// every element of C is summed in the same order for any thread count. Runs only where
// cpu_isa() >= Isa::Amx (the CPU has AMX-BF16 and the OS let this process use it).
void bf16gemm_amx(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace vitune::cpu
