// Deterministic reductions inside one thread block (or one warp), for the kernels that
// give one block to each row or block of elements: every thread folds its own strided
// share in index order, then the block combines the per-thread values through a fixed
// tree (warp shuffles) and thread 0 folds the per-warp results in warp order. The order
// depends only on the block size, so the same inputs always give the same bits.
#pragma once

#include <cuda_runtime.h>

namespace vitune::cuda {

// Threads per block of the row kernels: a multiple of the warp size, at most 32 warps.
constexpr int kRowThreads = 256;

struct SumOp {
  template <typename T>
  __device__ T operator()(T a, T b) const { return a + b; }
};

// The larger of two values; a NaN in `a` is kept, one in `b` is passed over (as the CPU
// kernels' `x > max ? x : max` scan does). A row holding a NaN ends up NaN either way,
// because its sum of exponentials is NaN.
struct MaxOp {
  template <typename T>
  __device__ T operator()(T a, T b) const { return b > a ? b : a; }
};

// Combines `value` over the 32 lanes of a warp; lane 0 holds the result.
template <typename T, typename Op>
__device__ T warp_reduce(T value, Op op) {
  for (int offset = 16; offset > 0; offset /= 2) {
    value = op(value, __shfl_down_sync(0xffffffffu, value, offset));
  }
  return value;
}

// Combines `value` over all threads of the block and returns the result to every
// thread. Every thread of the block must call it (it synchronises), with blockDim.x a
// multiple of 32. Calling it again right away is safe: the next call writes
// warp_results only after this call's second barrier (thread 0 has read them by then)
// and block_result only after its own first barrier (every thread has read this
// call's result by then).
template <typename T, typename Op>
__device__ T block_reduce(T value, Op op) {
  __shared__ T warp_results[32];
  __shared__ T block_result;
  value = warp_reduce(value, op);
  if (threadIdx.x % 32 == 0) warp_results[threadIdx.x / 32] = value;
  __syncthreads();
  if (threadIdx.x == 0) {
    T combined = warp_results[0];
    for (int w = 1; w < int(blockDim.x / 32); ++w) combined = op(combined, warp_results[w]);
    block_result = combined;
  }
  __syncthreads();
  return block_result;
}

template <typename T>
__device__ T block_sum(T value) {
  return block_reduce(value, SumOp{});
}

template <typename T>
__device__ T block_max(T value) {
  return block_reduce(value, MaxOp{});
}

}  // namespace vitune::cuda
