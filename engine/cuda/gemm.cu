// GEMM on a CUDA device through cuBLAS, with the shape rules of the CPU gemm: leading
// dimensions of a and c fold into rows when b is 2-D, c = alpha op(a) op(b) + beta c,
// and beta = 0 ignores c's old contents. f32 products run in TF32 or full fp32 as
// tf32_enabled() says (cublas_gemm.h f32_compute_type). Under bf16 autocast (engine/autocast.h) the
// f32 operands are converted to bfloat16 tensors and one cublasGemmStridedBatchedEx call
// multiplies them on tensor cores with fp32 accumulation into the fp32 output.
#include <cstdint>

#include "engine/cuda/cublas_gemm.h"
#include "engine/cuda/cuda_context.h"
#include "engine/flop_counter.h"
#include "engine/op_checks.h"
#include "engine/ops.h"

namespace vitune::cuda {

namespace {

using op_checks::GemmShape;

// Checks the operands of c = op(a) op(b) for 2-D views (all on one CUDA device) and
// returns M, N, K.
GemmShape gemm_shape(bool trans_a, bool trans_b, const Tensor& a, const Tensor& b, const Tensor& c,
                     const char* op) {
  check_cuda_float(a, op);
  same_device({&a, &b, &c}, op);
  return op_checks::gemm_shape(trans_a, trans_b, a, b, c, op);
}

// A stack of products: its size and each product's shape, checked (all on one CUDA
// device); a stack of 0 when there is nothing to compute.
struct StackShape {
  int64_t stack;
  GemmShape item;
};
StackShape stack_shape(bool trans_a, bool trans_b, const Tensor& a, const Tensor& b, const Tensor& c,
                       const char* op) {
  check_cuda_float(a, op);
  same_device({&a, &b, &c}, op);
  const int64_t stack = op_checks::gemm_stack_size(a, b, c, op);
  if (stack == 0 || a.numel() + c.numel() == 0) return {0, {0, 0, 0}};
  return {stack, op_checks::gemm_item_shape(trans_a, trans_b, a, b, c, op)};
}

// c[i] = beta c[i] for i < count, or 0 when beta is 0 (old contents ignored): the
// whole product when the inner dimension is empty.
template <typename T>
__global__ void scale_output_kernel(T* c, int64_t count, T beta) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    c[i] = beta == T(0) ? T(0) : beta * c[i];
  }
}

template <typename T>
void scale_output(int device, T* c, int64_t count, T beta) {
  if (count == 0) return;
  scale_output_kernel<T><<<blocks_for(count), kThreads, 0, stream(device)>>>(c, count, beta);
  check_launch("scale_output_kernel");
}

// `batch` products of shape s whose operands follow each other densely in memory.
template <typename T>
void dense_products(int device, bool trans_a, bool trans_b, GemmShape s, T alpha, const T* a, const T* b,
                    T beta, T* c, int64_t batch, const char* op) {
  if (s.k == 0) {
    scale_output(device, c, batch * s.m * s.n, beta);
    return;
  }
  const int64_t lda = trans_a ? s.m : s.k, ldb = trans_b ? s.k : s.n;
  row_major_gemm<T>(device, trans_a, trans_b, s.m, s.n, s.k, alpha, {a, lda, s.m * s.k}, {b, ldb, s.k * s.n},
                    beta, c, s.n, s.m * s.n, batch, op);
}

// The same products with f32 operands rounded to bfloat16 (nearest even) first.
void bf16_products(int device, bool trans_a, bool trans_b, GemmShape s, float alpha, const Tensor& a,
                   const Tensor& b, float beta, Tensor& c, int64_t batch, const char* op) {
  if (s.m == 0 || s.n == 0 || batch == 0) return;
  if (s.k == 0) {
    scale_output(device, c.kernel_data<float>(), batch * s.m * s.n, beta);
    return;
  }
  const Tensor a16 = a.to(DType::BF16), b16 = b.to(DType::BF16);  // f32 both, as checked
  const int64_t lda = trans_a ? s.m : s.k, ldb = trans_b ? s.k : s.n, ldc = s.n;
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  // Column-major, as in row_major_gemm: C^T [n, m] = op(B)^T [n, k] op(A)^T [k, m].
  VITUNE_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      cublas(device), op_b, op_a, cublas_int(s.n, "n", op), cublas_int(s.m, "m", op), cublas_int(s.k, "k", op),
      &alpha, b16.kernel_raw(), CUDA_R_16BF, cublas_int(ldb, "ldb", op), static_cast<long long>(s.k * s.n), a16.kernel_raw(),
      CUDA_R_16BF, cublas_int(lda, "lda", op), static_cast<long long>(s.m * s.k), &beta, c.kernel_raw(), CUDA_R_32F,
      cublas_int(ldc, "ldc", op), static_cast<long long>(s.m * s.n), cublas_int(batch, "batch", op),
      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  check_launch(op);
}

void check_autocast_operand(const Tensor& a, const char* op) {
  VITUNE_CHECK(a.dtype() == DType::F32, op, ": bf16 autocast takes f32 operands, got ", a.str());
}

}  // namespace

void gemm(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b, double beta,
          Tensor& c) {
  GemmShape s = gemm_shape(trans_a, trans_b, a, b, c, "gemm");
  count_flops(2 * s.m * s.n * s.k);
  const int device = a.device().index;
  dispatch_float(a, "gemm", [&](auto zero) {
    using T = decltype(zero);
    dense_products<T>(device, trans_a, trans_b, s, T(alpha), a.kernel_data<T>(), b.kernel_data<T>(), T(beta), c.kernel_data<T>(),
                      1, "gemm");
  });
}

// cuBLAS's product, then the bias add: two launches on the stream, in order.
void linear_forward(const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y) {
  gemm(false, true, 1.0, x, w, 0.0, y);
  add_row_broadcast(y, bias);
}

void gemm_batched(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b,
                  double beta, Tensor& c) {
  const char* op = "gemm_batched";
  const StackShape stacked = stack_shape(trans_a, trans_b, a, b, c, op);
  if (stacked.stack == 0) return;
  const int64_t stack = stacked.stack;
  const GemmShape s = stacked.item;
  count_flops(2 * stack * s.m * s.n * s.k);
  const int device = a.device().index;
  dispatch_float(a, op, [&](auto zero) {
    using T = decltype(zero);
    dense_products<T>(device, trans_a, trans_b, s, T(alpha), a.kernel_data<T>(), b.kernel_data<T>(), T(beta), c.kernel_data<T>(),
                      stack, op);
  });
}

void gemm_bf16(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b, double beta,
               Tensor& c) {
  const GemmShape s = gemm_shape(trans_a, trans_b, a, b, c, "gemm");
  check_autocast_operand(a, "gemm");
  count_flops(2 * s.m * s.n * s.k);
  bf16_products(a.device().index, trans_a, trans_b, s, float(alpha), a, b, float(beta), c, 1, "gemm");
}

void gemm_batched_bf16(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b, double beta,
                       Tensor& c) {
  const char* op = "gemm_batched";
  const StackShape stacked = stack_shape(trans_a, trans_b, a, b, c, op);
  if (stacked.stack == 0) return;
  const int64_t stack = stacked.stack;
  const GemmShape s = stacked.item;
  check_autocast_operand(a, op);
  count_flops(2 * stack * s.m * s.n * s.k);
  bf16_products(a.device().index, trans_a, trans_b, s, float(alpha), a, b, float(beta), c, stack, op);
}

}  // namespace vitune::cuda
