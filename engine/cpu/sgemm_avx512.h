// vitune's own fp32 GEMM for CPUs with AVX-512: B packed once and shared by the threads,
// A packed per group of rows (or read in place where few B strips would reuse it), C
// blocked to stay in L2, a 12 x 32 register-tile micro-kernel.
#pragma once

#include <cstdint>

#include "engine/cpu/isa.h"

namespace vitune::cpu {

// Whether this CPU can run sgemm_avx512 (its AVX-512 level, whatever VITUNE_CPU_ISA says).
inline bool has_avx512() { return detected_isa() >= Isa::Avx512; }

// Row-major C = alpha op(A) op(B) + beta C with leading dimensions, spread over the
// thread pool, then, when bias (n floats) is not null, C[i, :] += bias for every row i
// as each tile is stored: the bits of the product followed by a separate add. Every
// element of C is summed in the same order for any thread count.
void sgemm_avx512(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                  const float* bias = nullptr);

}  // namespace vitune::cpu
