// Deterministic column sums over rows, accumulate[c] += sum_r term(r, c), for the bias
// gradient (sum_rows_into) and LayerNorm's weight and bias gradients. Two passes in
// double, no atomics: the rows are cut into chunks of kRowsPerChunk; pass one gives one
// thread to each (chunk, column) and sums the chunk's rows in order; pass two gives one
// thread to each column and adds the chunk totals in chunk order. The order depends on
// the shape alone. Threads of a warp take neighbouring columns, so reads are coalesced.
#pragma once

#include <cstdint>

#include "engine/cuda/cuda_context.h"
#include "engine/tensor.h"

namespace vitune::cuda {

constexpr int64_t kRowsPerChunk = 64;

// partial[chunk * cols + c] = sum over the rows r of the chunk, in order, of term(r, c).
template <typename Term>
__global__ void chunk_column_sums_kernel(Term term, int64_t rows, int64_t cols, int64_t chunks,
                                         double* partial) {
  const int64_t total = chunks * cols;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t chunk = i / cols;
    const int64_t c = i % cols;
    const int64_t first = chunk * kRowsPerChunk;
    const int64_t last = first + kRowsPerChunk < rows ? first + kRowsPerChunk : rows;
    double sum = 0;
    for (int64_t r = first; r < last; ++r) sum += term(r, c);
    partial[i] = sum;
  }
}

// accumulate[c] += sum over chunks k, in order, of partial[k * cols + c].
template <typename T>
__global__ void add_chunk_totals_kernel(const double* partial, int64_t chunks, int64_t cols,
                                        T* accumulate) {
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < cols;
       c += int64_t(gridDim.x) * blockDim.x) {
    double sum = 0;
    for (int64_t k = 0; k < chunks; ++k) sum += partial[k * cols + c];
    accumulate[c] += T(sum);
  }
}

// accumulate[c] += sum over rows r of term(r, c) for c < cols, on `device`. Term is a
// copyable functor with `__device__ double operator()(int64_t r, int64_t c) const`.
template <typename T, typename Term>
void add_column_sums(const Term& term, int64_t rows, int64_t cols, T* accumulate, int device) {
  if (rows == 0 || cols == 0) return;
  const int64_t chunks = (rows + kRowsPerChunk - 1) / kRowsPerChunk;
  Tensor partial({chunks, cols}, DType::F64, Device::cuda(device));
  cudaStream_t s = stream(device);
  chunk_column_sums_kernel<<<blocks_for(chunks * cols), kThreads, 0, s>>>(term, rows, cols, chunks,
                                                                          partial.kernel_data<double>());
  check_launch("chunk_column_sums_kernel");
  add_chunk_totals_kernel<T><<<blocks_for(cols), kThreads, 0, s>>>(partial.kernel_data<double>(), chunks,
                                                                   cols, accumulate);
  check_launch("add_chunk_totals_kernel");
}

}  // namespace vitune::cuda
