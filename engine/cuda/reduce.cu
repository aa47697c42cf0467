// CUDA reductions: column sums over rows (the bias gradient), the sum and the sum of
// squares of all elements, and the finiteness test. Sums run in double in an order fixed
// by the data's shape alone (no atomics on floats), so every run gives the same bits.
#include <cstdint>

#include "engine/cuda/block_reduce.cuh"
#include "engine/cuda/column_sums.cuh"
#include "engine/cuda/cuda_context.h"
#include "engine/op_checks.h"
#include "engine/ops.h"

namespace vitune::cuda {

namespace {

// Elements per block of sum_all / sum_squares, as on the CPU: one thread block sums each
// block of elements, then one thread block sums the block totals.
constexpr int64_t kSumBlock = 4096;

// The plain value x[r, c] as a column-sum term.
template <typename T>
struct ValueTerm {
  const T* x;
  int64_t cols;
  __device__ double operator()(int64_t r, int64_t c) const { return double(x[r * cols + c]); }
};

struct Identity {
  __device__ double operator()(double v) const { return v; }
};

struct Square {
  __device__ double operator()(double v) const { return v * v; }
};

// partial[b] = sum of term(v[i]) over block b of kSumBlock elements: each thread sums
// its strided share in index order, then the block's fixed tree combines them.
template <typename T, typename Term>
__global__ void block_totals_kernel(const T* v, int64_t n, int64_t blocks, Term term,
                                    double* partial) {
  for (int64_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    const int64_t first = b * kSumBlock;
    const int64_t last = first + kSumBlock < n ? first + kSumBlock : n;
    double sum = 0;
    for (int64_t i = first + threadIdx.x; i < last; i += blockDim.x) sum += term(double(v[i]));
    sum = block_sum(sum);
    if (threadIdx.x == 0) partial[b] = sum;
  }
}

// total[0] = sum of partial[0 .. count), by one thread block in the same fixed manner.
__global__ void total_kernel(const double* partial, int64_t count, double* total) {
  double sum = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) sum += partial[i];
  sum = block_sum(sum);
  if (threadIdx.x == 0) total[0] = sum;
}

// found[0] = 1 when some element is not finite (every writer writes the same 1).
template <typename T>
__global__ void find_nonfinite_kernel(const T* v, int64_t n, int32_t* found) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    if (!isfinite(v[i])) found[0] = 1;
  }
}

// Copies one value of type V from device memory to the host and waits for it.
template <typename V>
V read_back(const V* source, int device, const char* op) {
  V value{};
  VITUNE_CUDA_CHECK(cudaMemcpyAsync(&value, source, sizeof(V), cudaMemcpyDeviceToHost, stream(device)));
  wait_for(device, op);
  return value;
}

// Sum over all elements of term(x[i]) in double.
template <typename Term>
double blocked_sum(const Tensor& x, const char* op, Term term) {
  check_cuda_float(x, op);
  const int device = x.device().index;
  const int64_t n = x.numel();
  if (n == 0) return 0.0;
  const int64_t blocks = (n + kSumBlock - 1) / kSumBlock;
  Tensor partial({blocks}, DType::F64, x.device());
  Tensor total({1}, DType::F64, x.device());
  cudaStream_t s = stream(device);
  dispatch_float(x, op, [&](auto zero) {
    using T = decltype(zero);
    block_totals_kernel<T><<<blocks_for(blocks, 1), kRowThreads, 0, s>>>(
        x.kernel_data<T>(), n, blocks, term, partial.kernel_data<double>());
    check_launch("block_totals_kernel");
  });
  total_kernel<<<1, kRowThreads, 0, s>>>(partial.kernel_data<double>(), blocks, total.kernel_data<double>());
  check_launch("total_kernel");
  return read_back(total.kernel_data<double>(), device, op);
}

}  // namespace

void sum_rows_into(const Tensor& x, Tensor& accumulate) {
  const char* op = "sum_rows_into";
  check_cuda_float(x, op);
  check_cuda_float(accumulate, op);
  const int64_t cols = op_checks::last_dim_vector(x, accumulate, "accumulate", op);
  const int device = same_device({&x, &accumulate}, op);
  if (cols == 0) return;
  const int64_t rows = x.numel() / cols;
  dispatch_float(x, op, [&](auto zero) {
    using T = decltype(zero);
    add_column_sums(ValueTerm<T>{x.kernel_data<T>(), cols}, rows, cols, accumulate.kernel_data<T>(), device);
  });
}

double sum_all(const Tensor& x) { return blocked_sum(x, "sum_all", Identity{}); }

double sum_squares(const Tensor& x) { return blocked_sum(x, "sum_squares", Square{}); }

bool all_finite(const Tensor& x) {
  const char* op = "all_finite";
  check_cuda_float(x, op);
  const int device = x.device().index;
  const int64_t n = x.numel();
  if (n == 0) return true;
  Tensor found = Tensor::zeros({1}, DType::I32, x.device());
  dispatch_float(x, op, [&](auto zero) {
    using T = decltype(zero);
    find_nonfinite_kernel<T><<<blocks_for(n), kThreads, 0, stream(device)>>>(
        x.kernel_data<T>(), n, found.kernel_data<int32_t>());
    check_launch("find_nonfinite_kernel");
  });
  return read_back(found.kernel_data<int32_t>(), device, op) == 0;
}

}  // namespace vitune::cuda
