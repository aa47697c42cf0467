// Multi-head scaled dot-product attention on a CUDA device, in timm's fused layout:
// qkv is [B, N, 3*D] = [B, N, 3, heads, dh]. The matrix products run through cuBLAS,
// each as one call over every (batch item, head) block (lattice_gemm.h; the layout and
// strides are worked out above Blocks). The row softmax and its backward are kernels of
// this file, one block per row, with sums in double over a fixed tree.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "engine/cuda/block_reduce.cuh"
#include "engine/cuda/cuda_context.h"
#include "engine/cuda/lattice_gemm.h"
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

// The matrices of one call, as lattices over (batch item b, head h) for lattice_gemm.
// With D = heads * dh, qkv [B, N, 3, H, dh] holds element (b, t, s, h, e) -- token t,
// s = 0, 1, 2 for Q, K, V, feature e of head h -- at ((b*N + t)*3 + s)*D + h*dh + e.
// So Q_bh, the [N, dh] matrix of item b and head h, starts at b*3ND + h*dh and has
// leading dimension 3D; K_bh and V_bh start D and 2D further on. From one head to the
// next is +dh, from one item to the next +3ND. probs [B, H, N, N] holds block (b, h) at
// (b*H + h)*N^2 with leading dimension N: head step N^2, item step H*N^2. ctx (and dctx)
// [B, N, D] holds ctx_bh at b*ND + h*dh with leading dimension D: head step dh, item
// step ND. One stride s reaching every block j = b*H + h of Q would need s = dh (the
// head step) and H*s = 3ND (the item step), i.e. D = 3ND, and for ctx D = ND: never,
// for N > 1. So each product is one lattice call over all B*H blocks (cuBLAS's
// pointer-array batched GEMM), where the probabilities alone would be one
// strided-batched run.
struct Blocks {
  const AttentionShape& s;
  // The lattices of a call's items from `first` on, in qkv (or dqkv), probs (or dS
  // scratch) and ctx (or dctx).
  template <typename P>
  Lattice<P> q(P qkv, int64_t first) const {
    return {qkv + first * 3 * s.tokens * s.dim, 3 * s.dim, 3 * s.tokens * s.dim, s.head_dim};
  }
  template <typename P>
  Lattice<P> k(P qkv, int64_t first) const {
    return q(qkv + s.dim, first);
  }
  template <typename P>
  Lattice<P> v(P qkv, int64_t first) const {
    return q(qkv + 2 * s.dim, first);
  }
  template <typename P>
  Lattice<P> probs(P p, int64_t first) const {
    const int64_t n2 = s.tokens * s.tokens;
    return {p + first * s.heads * n2, s.tokens, s.heads * n2, n2};
  }
  template <typename P>
  Lattice<P> ctx(P c, int64_t first) const {
    return {c + first * s.tokens * s.dim, s.dim, s.tokens * s.dim, s.head_dim};
  }
};

template <typename T>
void forward(const AttentionShape& s, int device, const T* qkv, T* ctx, T* probs) {
  const char* op = "attention_forward";
  const int64_t n = s.tokens, dh = s.head_dim;
  const T scale = T(1.0 / std::sqrt(double(dh)));
  const Blocks blocks{s};
  // S_bh [N, N] = Q_bh K_bh^T, unscaled, into block (b, h) of probs.
  lattice_gemm<T>(device, false, true, n, n, dh, T(1), blocks.q(qkv, 0), blocks.k(qkv, 0), T(0),
                  blocks.probs(probs, 0), s.batch, s.heads, op);
  const int64_t rows = s.batch * s.heads * n;
  scaled_softmax_rows_kernel<T><<<row_blocks(rows), kRowThreads, 0, stream(device)>>>(probs, rows, n, scale);
  check_launch("scaled_softmax_rows_kernel");
  // ctx_bh [N, dh] = P_bh V_bh, into columns h*dh.. of item b's rows of ctx.
  lattice_gemm<T>(device, false, false, n, dh, n, T(1), blocks.probs<const T*>(probs, 0), blocks.v(qkv, 0), T(0),
                  blocks.ctx(ctx, 0), s.batch, s.heads, op);
}

// dS scratch of at most this many bytes: the backward takes the batch in chunks of
// items whose [items, H, N, N] scratch fits (at least one item per chunk).
constexpr int64_t kScratchBytes = int64_t(256) << 20;

// Backward of items [first, first + items), per item b and head h, with scale =
// 1/sqrt(dh), S = scale Q K^T, P = softmax(S) rowwise and O = P V:
//   dV = P^T dO                          (O is linear in V)
//   dP = dO V^T                          (O is linear in P)
//   dS = P * (dP - rowsum(dP * P))       (softmax backward, row by row)
//   dQ = scale dS K,  dK = scale dS^T Q  (S is bilinear in Q and K)
// Each lands in dqkv where its input came from: Q at column 0, K at D, V at 2D, plus
// h * dh. Between them the three products write every element of the items' rows of
// dqkv (beta = 0), so dqkv needs no zeroing. ds is scratch [items, heads, N, N]. Every
// product covers all items and heads of the chunk in one lattice call.
template <typename T>
void backward_items(const AttentionShape& s, int device, int64_t first, int64_t items, const T* dctx, const T* qkv,
                    const T* probs, T* dqkv, T* ds) {
  const char* op = "attention_backward";
  const int64_t n = s.tokens, dh = s.head_dim, heads = s.heads;
  const T scale = T(1.0 / std::sqrt(double(dh)));
  const Blocks blocks{s};
  const LatticeOperand<T> d_out = blocks.ctx(dctx, first), p = blocks.probs(probs, first);
  const LatticeOperand<T> d_scores = blocks.probs<const T*>(ds, 0);
  // dP [N, N] = dO [N, dh] V^T.
  lattice_gemm<T>(device, false, true, n, n, dh, T(1), d_out, blocks.v(qkv, first), T(0), blocks.probs(ds, 0), items,
                  heads, op);
  const int64_t rows = items * heads * n;
  softmax_backward_rows_kernel<T><<<row_blocks(rows), kRowThreads, 0, stream(device)>>>(ds, p.data, rows, n);
  check_launch("softmax_backward_rows_kernel");
  // dQ [N, dh] = scale dS [N, N] K.
  lattice_gemm<T>(device, false, false, n, dh, n, scale, d_scores, blocks.k(qkv, first), T(0), blocks.q(dqkv, first),
                  items, heads, op);
  // dK [N, dh] = scale dS^T Q.
  lattice_gemm<T>(device, true, false, n, dh, n, scale, d_scores, blocks.q(qkv, first), T(0), blocks.k(dqkv, first),
                  items, heads, op);
  // dV [N, dh] = P^T dO.
  lattice_gemm<T>(device, true, false, n, dh, n, T(1), p, d_out, T(0), blocks.v(dqkv, first), items, heads, op);
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

// The math of the backward is written above backward_items.
Tensor attention_backward(const Tensor& dctx, const Tensor& qkv, const Tensor& probs, int heads) {
  const char* op = "attention_backward";
  const AttentionShape s = attention_shape(qkv, heads, op);
  check_on_cuda(dctx, op);
  check_on_cuda(probs, op);
  const int device = same_device({&qkv, &dctx, &probs}, op);
  op_checks::check_attention_grads(s, dctx, qkv, probs, op);
  Tensor dqkv(qkv.shape(), qkv.dtype(), qkv.device());
  if (s.batch == 0 || s.tokens == 0) return dqkv;
  // dP and dS of one chunk of items at a time; stream order makes reusing it safe.
  const int64_t item_bytes = s.heads * s.tokens * s.tokens * int64_t(dtype_size(qkv.dtype()));
  const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(s.batch, kScratchBytes / item_bytes));
  Tensor ds({chunk, s.heads, s.tokens, s.tokens}, qkv.dtype(), qkv.device());
  dispatch_float(qkv, op, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t first = 0; first < s.batch; first += chunk) {
      backward_items<T>(s, device, first, std::min(chunk, s.batch - first), dctx.kernel_data<T>(),
                        qkv.kernel_data<T>(), probs.kernel_data<T>(), dqkv.kernel_data<T>(), ds.kernel_data<T>());
    }
  });
  return dqkv;
}

}  // namespace vitune::cuda
