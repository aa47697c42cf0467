// The lattice products of lattice_gemm.h: one strided-batched call where one stride
// reaches every matrix, else one pointer-array batched call (cublas<t>gemmBatched).
#include <cublas_v2.h>

#include "engine/cuda/cublas_gemm.h"
#include "engine/cuda/cuda_context.h"
#include "engine/cuda/lattice_gemm.h"
#include "engine/error.h"
#include "engine/tensor.h"

namespace vitune::cuda {

namespace {

// The single stride that reaches matrix o * inner_count + i of the operand, or -1.
int64_t single_stride(int64_t outer, int64_t inner, int64_t outer_count, int64_t inner_count) {
  if (outer_count == 1) return inner;
  if (inner_count == 1) return outer;
  return outer == inner_count * inner ? inner : -1;
}

// a_of[j], b_of[j], c_of[j] = the addresses of matrix j = o * inner_count + i.
template <typename T>
__global__ void lattice_addresses_kernel(LatticeOperand<T> a, LatticeOperand<T> b, LatticeOutput<T> c,
                                         int64_t outer_count, int64_t inner_count, const T** a_of, const T** b_of,
                                         T** c_of) {
  const int64_t count = outer_count * inner_count;
  for (int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; j < count;
       j += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = j / inner_count, i = j % inner_count;
    a_of[j] = a.data + o * a.outer + i * a.inner;
    b_of[j] = b.data + o * b.outer + i * b.inner;
    c_of[j] = c.data + o * c.outer + i * c.inner;
  }
}

cublasStatus_t batched_gemm(cublasHandle_t handle, cublasOperation_t op_a, cublasOperation_t op_b, int m, int n,
                            int k, const float* alpha, const float* const a[], int lda, const float* const b[],
                            int ldb, const float* beta, float* const c[], int ldc, int batch) {
  return cublasGemmBatchedEx(handle, op_a, op_b, m, n, k, alpha, reinterpret_cast<const void* const*>(a), CUDA_R_32F,
                             lda, reinterpret_cast<const void* const*>(b), CUDA_R_32F, ldb, beta,
                             reinterpret_cast<void* const*>(c), CUDA_R_32F, ldc, batch, f32_compute_type(),
                             CUBLAS_GEMM_DEFAULT);
}

cublasStatus_t batched_gemm(cublasHandle_t handle, cublasOperation_t op_a, cublasOperation_t op_b, int m, int n,
                            int k, const double* alpha, const double* const a[], int lda, const double* const b[],
                            int ldb, const double* beta, double* const c[], int ldc, int batch) {
  return cublasDgemmBatched(handle, op_a, op_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, batch);
}

}  // namespace

template <typename T>
void lattice_gemm(int device, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
                  LatticeOperand<T> a, LatticeOperand<T> b, T beta, LatticeOutput<T> c, int64_t outer_count,
                  int64_t inner_count, const char* op) {
  const int64_t count = outer_count * inner_count;
  if (m == 0 || n == 0 || count == 0) return;
  const int64_t stride_a = single_stride(a.outer, a.inner, outer_count, inner_count);
  const int64_t stride_b = single_stride(b.outer, b.inner, outer_count, inner_count);
  const int64_t stride_c = single_stride(c.outer, c.inner, outer_count, inner_count);
  if (stride_a >= 0 && stride_b >= 0 && stride_c >= 0) {
    row_major_gemm<T>(device, trans_a, trans_b, m, n, k, alpha, {a.data, a.ld, stride_a}, {b.data, b.ld, stride_b},
                      beta, c.data, c.ld, stride_c, count, op);
    return;
  }
  VITUNE_CHECK(k > 0, op, ": empty inner dimension handed to cuBLAS");
  const int batch = cublas_int(count, "batch", op);
  // Three arrays of `count` device addresses, one word each.
  static_assert(sizeof(T*) == sizeof(int64_t), "device addresses are 64-bit");
  Tensor addresses({3 * count}, DType::I64, Device::cuda(device));
  int64_t* words = addresses.kernel_data<int64_t>();
  const T** a_of = static_cast<const T**>(static_cast<void*>(words));
  const T** b_of = static_cast<const T**>(static_cast<void*>(words + count));
  T** c_of = static_cast<T**>(static_cast<void*>(words + 2 * count));
  lattice_addresses_kernel<T><<<blocks_for(count), kThreads, 0, stream(device)>>>(a, b, c, outer_count, inner_count,
                                                                                  a_of, b_of, c_of);
  check_launch("lattice_addresses_kernel");
  // Column-major, as in row_major_gemm: C^T [n, m] = op(B)^T [n, k] op(A)^T [k, m].
  VITUNE_CUBLAS_CHECK(batched_gemm(cublas(device), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                   trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, cublas_int(n, "n", op), cublas_int(m, "m", op),
                                   cublas_int(k, "k", op), &alpha, b_of, cublas_int(b.ld, "ldb", op), a_of,
                                   cublas_int(a.ld, "lda", op), &beta, c_of, cublas_int(c.ld, "ldc", op), batch));
  check_launch(op);
}

template void lattice_gemm<float>(int, bool, bool, int64_t, int64_t, int64_t, float, LatticeOperand<float>,
                                  LatticeOperand<float>, float, LatticeOutput<float>, int64_t, int64_t, const char*);
template void lattice_gemm<double>(int, bool, bool, int64_t, int64_t, int64_t, double, LatticeOperand<double>,
                                   LatticeOperand<double>, double, LatticeOutput<double>, int64_t, int64_t,
                                   const char*);

}  // namespace vitune::cuda
