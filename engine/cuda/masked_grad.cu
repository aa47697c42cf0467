// CUDA gradient of a linear layer's weight at selected entries only. For y = x W^T with
// x [T, in], dy [T, out] and the entry e = j*in + k of W [out, in]:
//   dW[j, k] = sum_t dy[t, j] * x[t, k].
// The tokens are taken in fixed chunks. Each chunk of dy and x is transposed into
// [out, chunk] and [in, chunk] scratch, so that the chunk's tokens of one column lie
// side by side; then one warp per selected entry sums its products over the chunk
// (each lane a strided share in token order, then a fixed shuffle tree) into the
// entry's double running sum. No atomics: every sum has one owner and a fixed order.
// Work is O(T * (in + out) + T * selected); the dense [out, in] gradient is never formed.
#include <algorithm>
#include <cstdint>

#include "engine/cuda/block_reduce.cuh"
#include "engine/cuda/cuda_context.h"
#include "engine/cuda/index_check.h"
#include "engine/flop_counter.h"
#include "engine/op_checks.h"
#include "engine/ops.h"

namespace vitune::cuda {

namespace {

// Tokens per chunk: the transposed scratch holds (in + out) * kTokenChunk elements.
constexpr int64_t kTokenChunk = 1024;

// Warps (selected entries) per block of the sum kernel.
constexpr int kWarpsPerBlock = 8;

// dst [cols, rows] = src [rows, cols]^T; one thread per element of dst.
template <typename T>
__global__ void transpose_kernel(const T* src, int64_t rows, int64_t cols, T* dst) {
  const int64_t count = rows * cols;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < count;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = e / rows, r = e % rows;
    dst[e] = src[r * cols + c];
  }
}

// sums[i] += sum over the chunk's n tokens t of dy_t[j, t] * x_t[k, t], for the entry
// e = indices[i] = j * in + k; one warp per entry.
template <typename T>
__global__ void masked_sum_kernel(const T* dy_t, const T* x_t, int64_t n, const int64_t* indices,
                                  int64_t selected, int64_t in_features, const unsigned long long* fault,
                                  double* sums) {
  if (*fault != kNoFault) return;
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / 32);
  for (int64_t i = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; i < selected; i += warps) {
    const int64_t j = indices[i] / in_features, k = indices[i] % in_features;
    const T* dy_col = dy_t + j * n;
    const T* x_col = x_t + k * n;
    double partial = 0;
    for (int64_t t = lane; t < n; t += 32) partial += double(dy_col[t]) * double(x_col[t]);
    partial = warp_reduce(partial, SumOp{});
    if (lane == 0) sums[i] += partial;
  }
}

// accumulate[i] += T(sums[i]) (nothing when the index check failed).
template <typename T>
__global__ void add_sums_kernel(const double* sums, int64_t count, const unsigned long long* fault, T* accumulate) {
  if (*fault != kNoFault) return;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    accumulate[i] += T(sums[i]);
  }
}

// Indices must be strictly increasing and inside [0, out * in); the error (deferred,
// index_check.h) names the first position that is not, as the CPU check does.
const unsigned long long* check_selection(const Tensor& indices, int64_t out_features, int64_t in_features) {
  const int64_t limit = out_features * in_features;
  return check_indices_deferred(
      indices, limit, true, [limit, out_features, in_features](int64_t position, int64_t value, int64_t previous) {
        if (value < 0 || value >= limit) {
          return cat("masked_weight_grad: index ", value, " at position ", position, " is outside [0, ", limit,
                     ") for a weight [", out_features, ", ", in_features, "]");
        }
        return cat("masked_weight_grad: indices must be sorted and unique, but position ", position, " holds ", value,
                   " after ", previous);
      });
}

}  // namespace

// Math: y[t, j] = sum_k x[t, k] W[j, k], so for a loss L with dy = dL/dy,
//   dL/dW[j, k] = sum_t dL/dy[t, j] * dy[t, j]/dW[j, k] = sum_t dy[t, j] * x[t, k],
// the entry (j, k) of dy^T x, evaluated here only at the selected (j, k).
void masked_weight_grad(const Tensor& dy, const Tensor& x, const Tensor& indices,
                        int64_t in_features, Tensor& accumulate) {
  const char* op = "masked_weight_grad";
  check_cuda_float(dy, op);
  check_cuda_float(x, op);
  check_cuda_float(accumulate, op);
  check_on_cuda(indices, op);
  const int device = same_device({&dy, &x, &indices, &accumulate}, op);
  const op_checks::MaskedGradShape shape =
      op_checks::masked_grad_shape(dy, x, indices, in_features, accumulate, op);
  const int64_t out_features = shape.out_features, tokens = shape.tokens;
  const int64_t selected = indices.numel();
  if (selected == 0) return;
  const unsigned long long* fault = check_selection(indices, out_features, in_features);
  if (tokens == 0) return;
  count_flops(2 * tokens * selected);

  dispatch_float(x, op, [&](auto zero) {
    using T = decltype(zero);
    cudaStream_t s = stream(device);
    const int64_t chunk = std::min(tokens, kTokenChunk);
    Tensor dy_t({out_features, chunk}, dy.dtype(), dy.device());
    Tensor x_t({in_features, chunk}, x.dtype(), x.device());
    Tensor sums = Tensor::zeros({selected}, DType::F64, dy.device());
    const unsigned sum_blocks = blocks_for(selected, kWarpsPerBlock);
    // Chunks in token order; within a chunk every entry is summed by one warp.
    for (int64_t t0 = 0; t0 < tokens; t0 += chunk) {
      const int64_t n = std::min(chunk, tokens - t0);
      transpose_kernel<T><<<blocks_for(n * out_features), kThreads, 0, s>>>(
          dy.kernel_data<T>() + t0 * out_features, n, out_features, dy_t.kernel_data<T>());
      check_launch("transpose_kernel");
      transpose_kernel<T><<<blocks_for(n * in_features), kThreads, 0, s>>>(
          x.kernel_data<T>() + t0 * in_features, n, in_features, x_t.kernel_data<T>());
      check_launch("transpose_kernel");
      masked_sum_kernel<T><<<sum_blocks, kWarpsPerBlock * 32, 0, s>>>(
          dy_t.kernel_data<T>(), x_t.kernel_data<T>(), n, indices.kernel_data<int64_t>(), selected, in_features, fault, sums.kernel_data<double>());
      check_launch("masked_sum_kernel");
    }
    add_sums_kernel<T><<<blocks_for(selected), kThreads, 0, s>>>(sums.kernel_data<double>(), selected, fault,
                                                                   accumulate.kernel_data<T>());
    check_launch("add_sums_kernel");
  });
}

}  // namespace vitune::cuda
