// CUDA top-k per row, with the CPU's ordering: the k largest entries of each row of
// [R, C] in descending order, ties to the lower column index, NaN never selected, and
// index -1 with value NaN where a row has fewer than k non-NaN entries. One block per
// row. A row of up to kSortCapacity columns is sorted whole in shared memory by a
// bitonic network over (value, column) pairs; a longer row is scanned k times, each
// pass picking the best entry ranked after the previous pick. Both orders are strict
// and total, so the result is unique and does not depend on thread timing.
#include <cstdint>
#include <limits>

#include "engine/cuda/cuda_context.h"
#include "engine/ops.h"

namespace vitune::cuda {

namespace {

// Longest row sorted in shared memory: 4096 (value, int column) pairs take 48 KiB in
// double, the most a block gets without opting in to more.
constexpr int64_t kSortCapacity = 4096;
constexpr int kSortThreads = 512;
constexpr int kSelectThreads = 256;

unsigned row_blocks(int64_t rows) {
  constexpr int64_t kMaxBlocks = int64_t(1) << 20;
  return unsigned(rows < kMaxBlocks ? rows : kMaxBlocks);
}

// The ranking: (va, ca) comes before (vb, cb) when va is larger, or equal with the lower
// column; every NaN comes after every number (NaNs among themselves by column).
template <typename T>
__device__ bool ranks_before(T va, int64_t ca, T vb, int64_t cb) {
  const bool a_nan = va != va, b_nan = vb != vb;
  if (a_nan || b_nan) return a_nan == b_nan ? ca < cb : b_nan;
  return va > vb || (va == vb && ca < cb);
}

template <typename T>
__device__ void write_choice(T value, int64_t column, T* out_value, int64_t* out_index) {
  const bool missing = column < 0 || value != value;
  *out_value = missing ? std::numeric_limits<T>::quiet_NaN() : value;
  *out_index = missing ? -1 : column;
}

// One row per block: the row, padded with NaN to `padded` (a power of two), is sorted
// best first by a bitonic network in shared memory; its first k entries are written.
template <typename T>
__global__ void topk_sort_kernel(const T* x, int64_t rows, int64_t cols, int64_t k, int padded, T* out_values,
                                 int64_t* out_indices) {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  T* values = reinterpret_cast<T*>(shared_bytes);
  int* columns = reinterpret_cast<int*>(shared_bytes + size_t(padded) * sizeof(T));
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* line = x + r * cols;
    for (int i = threadIdx.x; i < padded; i += blockDim.x) {
      values[i] = i < cols ? line[i] : std::numeric_limits<T>::quiet_NaN();
      columns[i] = i;
    }
    __syncthreads();
    // The bitonic network: stage `size` turns bitonic runs of `size` entries into sorted
    // runs, in ranking order where (i & size) == 0 and reversed elsewhere, so that two
    // neighbouring runs form the next stage's bitonic run; the last stage (size = padded)
    // leaves the whole row in ranking order. Each compared pair belongs to the thread of
    // its lower position, so no two threads touch one entry within a step.
    for (int size = 2; size <= padded; size *= 2) {
      for (int stride = size / 2; stride > 0; stride /= 2) {
        for (int i = threadIdx.x; i < padded; i += blockDim.x) {
          const int partner = i ^ stride;
          if (partner <= i) continue;
          const bool forward = (i & size) == 0;
          const bool partner_first = ranks_before(values[partner], columns[partner], values[i], columns[i]);
          const bool i_first = ranks_before(values[i], columns[i], values[partner], columns[partner]);
          if (forward ? partner_first : i_first) {
            const T v = values[i];
            values[i] = values[partner];
            values[partner] = v;
            const int c = columns[i];
            columns[i] = columns[partner];
            columns[partner] = c;
          }
        }
        __syncthreads();
      }
    }
    for (int64_t i = threadIdx.x; i < k; i += blockDim.x) {
      write_choice(values[i], int64_t(columns[i]), out_values + r * k + i, out_indices + r * k + i);
    }
    __syncthreads();  // the next row overwrites the shared arrays
  }
}

// One row per block, k passes: pass p picks the best entry ranked after pass p-1's
// pick (a block-wide tree of the per-thread bests); no entry left gives -1 and NaN.
template <typename T>
__global__ void topk_select_kernel(const T* x, int64_t rows, int64_t cols, int64_t k, T* out_values,
                                   int64_t* out_indices) {
  __shared__ T best_values[kSelectThreads];
  __shared__ int64_t best_columns[kSelectThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* line = x + r * cols;
    T previous_value = 0;
    int64_t previous_column = -1;  // -1: no pick yet
    for (int64_t p = 0; p < k; ++p) {
      T mine = 0;
      int64_t mine_column = -1;
      for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        const T v = line[c];
        if (v != v) continue;
        const bool after_previous =
            previous_column < 0 || v < previous_value || (v == previous_value && c > previous_column);
        if (after_previous && (mine_column < 0 || ranks_before(v, c, mine, mine_column))) {
          mine = v;
          mine_column = c;
        }
      }
      best_values[threadIdx.x] = mine;
      best_columns[threadIdx.x] = mine_column;
      __syncthreads();
      for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (int(threadIdx.x) < half) {
          const int other = threadIdx.x + half;
          const int64_t c = best_columns[other];
          if (c >= 0 && (best_columns[threadIdx.x] < 0 ||
                         ranks_before(best_values[other], c, best_values[threadIdx.x], best_columns[threadIdx.x]))) {
            best_values[threadIdx.x] = best_values[other];
            best_columns[threadIdx.x] = c;
          }
        }
        __syncthreads();
      }
      previous_value = best_values[0];
      previous_column = best_columns[0];
      __syncthreads();  // everyone has read the result before the next pass writes
      if (threadIdx.x == 0) {
        write_choice(previous_value, previous_column, out_values + r * k + p, out_indices + r * k + p);
      }
      if (previous_column < 0) {
        // No entry left: the rest of the row's picks are missing too.
        for (int64_t q = p + 1 + threadIdx.x; q < k; q += blockDim.x) {
          write_choice(T(0), int64_t(-1), out_values + r * k + q, out_indices + r * k + q);
        }
        break;
      }
    }
  }
}

int padded_length(int64_t cols) {
  int padded = 1;
  while (padded < cols) padded *= 2;
  return padded;
}

}  // namespace

// values and indices are (re)assigned to new tensors [R, k] of x's dtype and i64.
void topk_rows(const Tensor& x, int64_t k, Tensor& values, Tensor& indices) {
  check_cuda_float(x, "topk_rows");
  VITUNE_CHECK(x.ndim() == 2, "topk_rows: expected a 2-D tensor [R, C], got ", x.str());
  const int64_t rows = x.dim(0);
  const int64_t cols = x.dim(1);
  VITUNE_CHECK(k >= 0 && k <= cols, "topk_rows: k = ", k, " outside [0, ", cols, "] for ",
               x.str());
  values = Tensor({rows, k}, x.dtype(), x.device());
  indices = Tensor({rows, k}, DType::I64, x.device());
  if (rows == 0 || k == 0) return;
  cudaStream_t s = stream(x.device().index);
  dispatch_float(x, "topk_rows", [&](auto zero) {
    using T = decltype(zero);
    if (cols <= kSortCapacity) {
      const int padded = padded_length(cols);
      const size_t shared = size_t(padded) * (sizeof(T) + sizeof(int));
      topk_sort_kernel<T><<<row_blocks(rows), kSortThreads, shared, s>>>(x.kernel_data<T>(), rows, cols, k, padded,
                                                                         values.kernel_data<T>(), indices.kernel_data<int64_t>());
      check_launch("topk_sort_kernel");
    } else {
      topk_select_kernel<T><<<row_blocks(rows), kSelectThreads, 0, s>>>(x.kernel_data<T>(), rows, cols, k,
                                                                        values.kernel_data<T>(), indices.kernel_data<int64_t>());
      check_launch("topk_select_kernel");
    }
  });
}

}  // namespace vitune::cuda
