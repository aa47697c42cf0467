// GEMM on a CUDA device through cuBLAS, with the shape rules of the CPU gemm: leading
// dimensions of a and c fold into rows when b is 2-D, c = alpha op(a) op(b) + beta c,
// and beta = 0 ignores c's old contents. The handle's math mode (TF32 or full fp32) is
// chosen by cublas(device), never per call.
#include <cstdint>

#include "engine/cuda/cublas_gemm.h"
#include "engine/cuda/cuda_context.h"
#include "engine/flop_counter.h"
#include "engine/ops.h"

namespace vitune::cuda {

namespace {

struct GemmShape {
  int64_t m, n, k;
};

// The number of rows of t viewed as [rows, last dim]: the product of all dimensions
// but the last, well defined when the last one is 0.
int64_t leading_rows(const Tensor& t) {
  int64_t rows = 1;
  for (int axis = 0; axis + 1 < t.ndim(); ++axis) rows *= t.dim(axis);
  return rows;
}

// Checks operand shapes of c = op(a) op(b) for 2-D views and returns M, N, K.
GemmShape gemm_shape(bool trans_a, bool trans_b, const Tensor& a, const Tensor& b, const Tensor& c,
                     const char* op) {
  check_cuda_float(a, op);
  same_device({&a, &b, &c}, op);
  VITUNE_CHECK(a.dtype() == b.dtype() && a.dtype() == c.dtype(), op, ": mixed dtypes ", a.str(), ", ",
               b.str(), ", ", c.str());
  VITUNE_CHECK(b.ndim() == 2 && c.ndim() >= 2 && a.ndim() == c.ndim(), op, ": bad ranks ", a.str(),
               " x ", b.str(), " -> ", c.str());
  int64_t a_rows = leading_rows(a), a_cols = a.dim(-1);
  int64_t m = trans_a ? a_cols : a_rows, k = trans_a ? a_rows : a_cols;
  VITUNE_CHECK(!trans_a || a.ndim() == 2, op, ": a transposed operand must be 2-D, got ", a.str());
  int64_t kb = trans_b ? b.dim(1) : b.dim(0), n = trans_b ? b.dim(0) : b.dim(1);
  VITUNE_CHECK(k == kb && leading_rows(c) == m && c.dim(-1) == n, op, ": shapes ", a.str(),
               (trans_a ? "^T" : ""), " x ", b.str(), (trans_b ? "^T" : ""), " do not give ", c.str());
  return {m, n, k};
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

}  // namespace

void gemm(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b, double beta,
          Tensor& c) {
  GemmShape s = gemm_shape(trans_a, trans_b, a, b, c, "gemm");
  count_flops(2 * s.m * s.n * s.k);
  const int device = a.device().index;
  dispatch_float(a, "gemm", [&](auto zero) {
    using T = decltype(zero);
    dense_products<T>(device, trans_a, trans_b, s, T(alpha), a.data<T>(), b.data<T>(), T(beta), c.data<T>(),
                      1, "gemm");
  });
}

void gemm_batched(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b,
                  double beta, Tensor& c) {
  const char* op = "gemm_batched";
  check_cuda_float(a, op);
  same_device({&a, &b, &c}, op);
  VITUNE_CHECK(a.ndim() == 3 && b.ndim() == 3 && c.ndim() == 3 && a.dim(0) == b.dim(0) &&
                   a.dim(0) == c.dim(0),
               op, ": expects [S,.,.] operands with one stack size, got ", a.str(), ", ", b.str(), ", ",
               c.str());
  int64_t stack = a.dim(0);
  if (stack == 0 || a.numel() + c.numel() == 0) return;
  GemmShape s = gemm_shape(trans_a, trans_b, a.rows(0, 1).reshape({a.dim(1), a.dim(2)}),
                           b.rows(0, 1).reshape({b.dim(1), b.dim(2)}),
                           c.rows(0, 1).reshape({c.dim(1), c.dim(2)}), op);
  count_flops(2 * stack * s.m * s.n * s.k);
  const int device = a.device().index;
  dispatch_float(a, op, [&](auto zero) {
    using T = decltype(zero);
    dense_products<T>(device, trans_a, trans_b, s, T(alpha), a.data<T>(), b.data<T>(), T(beta), c.data<T>(),
                      stack, op);
  });
}

}  // namespace vitune::cuda
