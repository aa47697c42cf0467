// The few OpenBLAS entry points vitune uses, behind names of its own so that the rest
// of the engine does not include cblas.h.
#pragma once

#include <cstdint>

namespace vitune {

// Name of the OpenBLAS kernel family in use ("SkylakeX", "Haswell", ...), for benches.
const char* blas_core_name();

// Row-major C = alpha op(A) op(B) + beta C with explicit leading dimensions.
void blas_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
               int64_t ldc);
void blas_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
               const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
               int64_t ldc);

}  // namespace vitune
