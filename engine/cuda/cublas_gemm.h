// Row-major matrix products through cuBLAS, which is column-major. A row-major matrix
// X [r, c] with leading dimension ld is, read column-major, X^T [c, r] with the same
// leading dimension, so the row-major product C = op(A) op(B) is the column-major
// product C^T = op(B)^T op(A)^T: the same call with the operands (and their sizes)
// swapped. One strided-batched call serves the single products (batch 1) and the
// stacks (gemm_batched; attention through lattice_gemm.h). Include only from .cu files.
#pragma once

#include <cublas_v2.h>

#include <climits>
#include <cstdint>

#include "engine/cuda/cuda_context.h"
#include "engine/devices.h"
#include "engine/error.h"

namespace vitune::cuda {

// One operand of a row-major product: its first element, leading dimension (elements
// between rows as stored) and the distance between consecutive matrices of a batch.
template <typename T>
struct RowMajorOperand {
  const T* data;
  int64_t ld;
  int64_t stride;
};

// The compute type of f32 products: with tf32_enabled(), CUBLAS_COMPUTE_32F_FAST_TF32,
// which lets cuBLAS use TF32 tensor cores (it may still pick an fp32 kernel: on an H200
// a stack of twelve [197 x 64] x [64 x 197] products stays fp32), else exact fp32.
inline cublasComputeType_t f32_compute_type() {
  return tf32_enabled() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

inline cublasStatus_t strided_gemm(cublasHandle_t handle, cublasOperation_t op_a, cublasOperation_t op_b,
                                   int m, int n, int k, const float* alpha, const float* a, int lda,
                                   long long stride_a, const float* b, int ldb, long long stride_b,
                                   const float* beta, float* c, int ldc, long long stride_c, int batch) {
  return cublasGemmStridedBatchedEx(handle, op_a, op_b, m, n, k, alpha, a, CUDA_R_32F, lda, stride_a, b, CUDA_R_32F,
                                    ldb, stride_b, beta, c, CUDA_R_32F, ldc, stride_c, batch, f32_compute_type(),
                                    CUBLAS_GEMM_DEFAULT);
}

inline cublasStatus_t strided_gemm(cublasHandle_t handle, cublasOperation_t op_a, cublasOperation_t op_b,
                                   int m, int n, int k, const double* alpha, const double* a, int lda,
                                   long long stride_a, const double* b, int ldb, long long stride_b,
                                   const double* beta, double* c, int ldc, long long stride_c, int batch) {
  return cublasDgemmStridedBatched(handle, op_a, op_b, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c,
                                   ldc, stride_c, batch);
}

// A size handed to cuBLAS, which takes int: refuses (naming `op`) what does not fit.
inline int cublas_int(int64_t value, const char* what, const char* op) {
  VITUNE_CHECK(value >= 0 && value <= INT_MAX, op, ": ", what, " = ", value,
               " does not fit the 32-bit sizes of cuBLAS");
  return int(value);
}

// For each of `batch` matrices: C [m, n] = alpha op(A) op(B) + beta C, all row-major,
// where op(A) is [m, k] (A stored [k, m] when trans_a) and op(B) is [k, n] (B stored
// [n, k] when trans_b). beta = 0 ignores C's old contents (cuBLAS does not read C then).
// Queued on the handle's stream; nothing is done when m, n or batch is 0. k must be
// positive: callers handle k = 0 (C = beta C) themselves, as cuBLAS leaves it unspecified.
template <typename T>
void row_major_gemm(int device, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
                    RowMajorOperand<T> a, RowMajorOperand<T> b, T beta, T* c, int64_t ldc, int64_t stride_c,
                    int64_t batch, const char* op) {
  if (m == 0 || n == 0 || batch == 0) return;
  VITUNE_CHECK(k > 0, op, ": empty inner dimension handed to cuBLAS");
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  // Column-major: C^T [n, m] = op(B)^T [n, k] op(A)^T [k, m].
  VITUNE_CUBLAS_CHECK(strided_gemm(cublas(device), op_b, op_a, cublas_int(n, "n", op), cublas_int(m, "m", op),
                                   cublas_int(k, "k", op), &alpha, b.data, cublas_int(b.ld, "ldb", op), b.stride,
                                   a.data, cublas_int(a.ld, "lda", op), a.stride, &beta, c,
                                   cublas_int(ldc, "ldc", op), stride_c, cublas_int(batch, "batch", op)));
  check_launch(op);
}

}  // namespace vitune::cuda
