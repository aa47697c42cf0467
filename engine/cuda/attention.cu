// Multi-head scaled dot-product attention on a CUDA device, in timm's fused layout:
// qkv is [B, N, 3*D] = [B, N, 3, heads, dh]. The matrix products run through cuBLAS,
// one strided-batched call per batch item covering all its heads: Q_h of item b starts
// at b*N*3D + h*dh with leading dimension 3D (K_h and V_h D and 2D further on), so
// consecutive heads are dh apart; the probabilities of (b, h) are a dense N x N block
// of probs [B, heads, N, N]. The row softmax and its backward are kernels of this file,
// one block per row, with sums in double over a fixed tree.
#include <cmath>
#include <cstdint>

#include "engine/cuda/block_reduce.cuh"
#include "engine/cuda/cublas_gemm.h"
#include "engine/cuda/cuda_context.h"
#include "engine/op_checks.h"
#include "engine/ops.h"

namespace vitune::cuda {

namespace {

// Sizes of one call: qkv [batch, tokens, 3 * dim], dim = heads * head_dim.
using op_checks::AttentionShape;

AttentionShape attention_shape(const Tensor& qkv, int heads, const char* op) {
  check_cuda_float(qkv, op);
  return op_checks::attention_shape(qkv, heads, op);
}

// Grid for the one-block-per-row kernels: rows on gridDim.x, looped when there are more.
unsigned row_blocks(int64_t rows) {
  constexpr int64_t kMaxBlocks = int64_t(1) << 20;
  return unsigned(rows < kMaxBlocks ? rows : kMaxBlocks);
}

__device__ inline float exp_of(float x) { return expf(x); }
__device__ inline double exp_of(double x) { return exp(x); }

// Each row of p (rows of length n) becomes softmax(scale * row), in place: the maximum
// is subtracted before exponentiating, the exponentials are summed in double, and
// every entry is multiplied by T(1 / sum).
template <typename T>
__global__ void scaled_softmax_rows_kernel(T* p, int64_t rows, int64_t n, T scale) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    T* row = p + r * n;
    T local_max = -INFINITY;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) local_max = MaxOp{}(local_max, scale * row[j]);
    const T max = block_max(local_max);
    double local_sum = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const T e = exp_of(scale * row[j] - max);
      row[j] = e;
      local_sum += double(e);
    }
    const T inverse = T(1.0 / block_sum(local_sum));
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) row[j] *= inverse;
  }
}

// The softmax backward of each row, in place on dP: with P = softmax(S) rowwise,
// dS[j] = P[j] * (dP[j] - sum_i dP[i] P[i]) (the Jacobian of softmax is
// diag(P) - P P^T, applied to dP). The row sum is taken in double.
template <typename T>
__global__ void softmax_backward_rows_kernel(T* dp, const T* p, int64_t rows, int64_t n) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    T* d_row = dp + r * n;
    const T* p_row = p + r * n;
    double local = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) local += double(d_row[j]) * double(p_row[j]);
    const T c = T(block_sum(local));
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) d_row[j] = p_row[j] * (d_row[j] - c);
  }
}

template <typename T>
void forward(const AttentionShape& s, int device, const T* qkv, T* ctx, T* probs) {
  const char* op = "attention_forward";
  const int64_t n = s.tokens, dh = s.head_dim, d = s.dim;
  const T scale = T(1.0 / std::sqrt(double(dh)));
  for (int64_t b = 0; b < s.batch; ++b) {
    const T* q = qkv + b * n * 3 * d;
    // Per head h: S_h [N, N] = Q_h K_h^T, unscaled, into the head's block of probs.
    row_major_gemm<T>(device, false, true, n, n, dh, T(1), {q, 3 * d, dh}, {q + d, 3 * d, dh}, T(0),
                      probs + b * s.heads * n * n, n, n * n, s.heads, op);
  }
  const int64_t rows = s.batch * s.heads * n;
  scaled_softmax_rows_kernel<T><<<row_blocks(rows), kRowThreads, 0, stream(device)>>>(probs, rows, n, scale);
  check_launch("scaled_softmax_rows_kernel");
  for (int64_t b = 0; b < s.batch; ++b) {
    const T* v = qkv + b * n * 3 * d + 2 * d;
    // Per head h: ctx_h [N, dh] = P_h V_h, into columns h*dh.. of ctx's rows of item b.
    row_major_gemm<T>(device, false, false, n, dh, n, T(1), {probs + b * s.heads * n * n, n, n * n},
                      {v, 3 * d, dh}, T(0), ctx + b * n * d, d, dh, s.heads, op);
  }
}

// Backward of one batch item b, per head h with scale = 1/sqrt(dh), S = scale Q K^T,
// P = softmax(S) rowwise and O = P V (all heads of the item in each call):
//   dV = P^T dO                          (O is linear in V)
//   dP = dO V^T                          (O is linear in P)
//   dS = P * (dP - rowsum(dP * P))       (softmax backward, row by row)
//   dQ = scale dS K,  dK = scale dS^T Q  (S is bilinear in Q and K)
// Each lands in dqkv where its input came from: Q at column 0, K at D, V at 2D, plus
// h * dh. Between them the three products write every element of the item's rows of
// dqkv (beta = 0), so dqkv needs no zeroing. ds is scratch [heads, N, N].
template <typename T>
void backward_item(const AttentionShape& s, int device, int64_t b, const T* dctx, const T* qkv, const T* probs,
                   T* dqkv, T* ds) {
  const char* op = "attention_backward";
  const int64_t n = s.tokens, dh = s.head_dim, d = s.dim, heads = s.heads;
  const T scale = T(1.0 / std::sqrt(double(dh)));
  const T* q = qkv + b * n * 3 * d;
  const T* k = q + d;
  const T* v = q + 2 * d;
  const T* d_out = dctx + b * n * d;
  const T* p = probs + b * heads * n * n;
  T* dq = dqkv + b * n * 3 * d;
  T* dk = dq + d;
  T* dv = dq + 2 * d;
  // dP [N, N] = dO [N, dh] V^T.
  row_major_gemm<T>(device, false, true, n, n, dh, T(1), {d_out, d, dh}, {v, 3 * d, dh}, T(0), ds, n, n * n,
                    heads, op);
  const int64_t rows = heads * n;
  softmax_backward_rows_kernel<T><<<row_blocks(rows), kRowThreads, 0, stream(device)>>>(ds, p, rows, n);
  check_launch("softmax_backward_rows_kernel");
  // dQ [N, dh] = scale dS [N, N] K.
  row_major_gemm<T>(device, false, false, n, dh, n, scale, {ds, n, n * n}, {k, 3 * d, dh}, T(0), dq, 3 * d, dh,
                    heads, op);
  // dK [N, dh] = scale dS^T Q.
  row_major_gemm<T>(device, true, false, n, dh, n, scale, {ds, n, n * n}, {q, 3 * d, dh}, T(0), dk, 3 * d, dh,
                    heads, op);
  // dV [N, dh] = P^T dO.
  row_major_gemm<T>(device, true, false, n, dh, n, T(1), {p, n, n * n}, {d_out, d, dh}, T(0), dv, 3 * d, dh,
                    heads, op);
}

}  // namespace

Tensor attention_forward(const Tensor& qkv, int heads, Tensor& probs) {
  const char* op = "attention_forward";
  const AttentionShape s = attention_shape(qkv, heads, op);
  const int device = qkv.device().index;
  Tensor ctx({s.batch, s.tokens, s.dim}, qkv.dtype(), qkv.device());
  probs = Tensor({s.batch, s.heads, s.tokens, s.tokens}, qkv.dtype(), qkv.device());
  if (s.batch == 0 || s.tokens == 0) return ctx;
  dispatch_float(qkv, op, [&](auto zero) {
    using T = decltype(zero);
    forward<T>(s, device, qkv.kernel_data<T>(), ctx.kernel_data<T>(), probs.kernel_data<T>());
  });
  return ctx;
}

// The math of the backward is written above backward_item.
Tensor attention_backward(const Tensor& dctx, const Tensor& qkv, const Tensor& probs, int heads) {
  const char* op = "attention_backward";
  const AttentionShape s = attention_shape(qkv, heads, op);
  check_on_cuda(dctx, op);
  check_on_cuda(probs, op);
  const int device = same_device({&qkv, &dctx, &probs}, op);
  op_checks::check_attention_grads(s, dctx, qkv, probs, op);
  Tensor dqkv(qkv.shape(), qkv.dtype(), qkv.device());
  if (s.batch == 0 || s.tokens == 0) return dqkv;
  // dP and dS of one batch item at a time; stream order makes reusing it safe.
  Tensor ds({s.heads, s.tokens, s.tokens}, qkv.dtype(), qkv.device());
  dispatch_float(qkv, op, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t b = 0; b < s.batch; ++b) {
      backward_item<T>(s, device, b, dctx.kernel_data<T>(), qkv.kernel_data<T>(), probs.kernel_data<T>(), dqkv.kernel_data<T>(),
                       ds.kernel_data<T>());
    }
  });
  return dqkv;
}

}  // namespace vitune::cuda
