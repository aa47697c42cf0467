// CUDA gather and scatter through flat i64 indices, and gather_columns through column
// numbers, with the CPU's rules: every index is checked (against [0, numel), or
// [0, columns)) on the device before anything is written (a bad index is an Error,
// raised at the next wait for the device (index_check.h), and leaves x untouched: the
// kernels read the check's verdict and do nothing); gather, gather_columns and scatter
// move elements of any dtype, scatter_add adds float elements. Repeated indices keep the
// CPU's sequential meaning without float atomics: the (index, position) pairs are sorted
// by index with a stable radix sort, so each index's positions form one run in their
// original order; scatter writes the last value of each run, and scatter_add adds a
// run's values one after another, in position order, from one thread.
#include <cub/device/device_radix_sort.cuh>

#include <climits>
#include <cstdint>
#include <string>

#include "engine/cuda/cuda_context.h"
#include "engine/cuda/index_check.h"
#include "engine/op_checks.h"
#include "engine/ops.h"

namespace vitune::cuda {

namespace {

// Queues the check of the indices (index_check.h); returns the word the kernels read.
const unsigned long long* check_indices(const Tensor& indices, int64_t numel, const Tensor& x, const char* op) {
  check_on_cuda(indices, op);
  op_checks::check_index_dtype(indices, op);
  same_device({&x, &indices}, op);
  return check_indices_deferred(indices, numel, false,
                                [op = std::string(op), numel, x = x.str()](int64_t position, int64_t value, int64_t) {
                                  return cat(op, ": index ", value, " at position ", position, " is outside [0, ",
                                             numel, ") for ", x);
                                });
}

const unsigned long long* check_scatter_args(const Tensor& x, const Tensor& indices, const Tensor& values,
                                             const char* op) {
  check_on_cuda(x, op);
  check_on_cuda(values, op);
  same_device({&x, &values}, op);
  op_checks::check_scatter_values(x, indices, values, op);
  return check_indices(indices, x.numel(), x, op);
}

template <typename W>
__global__ void gather_kernel(const W* in, const int64_t* indices, int64_t count, const unsigned long long* fault,
                              W* out) {
  if (*fault != kNoFault) return;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    out[i] = in[indices[i]];
  }
}

// out[r, q] = in[r, columns[q]] for r < rows, q < count; one thread per element of out.
template <typename W>
__global__ void gather_columns_kernel(const W* in, int64_t rows, int64_t cols, const int64_t* columns, int64_t count,
                                      const unsigned long long* fault, W* out) {
  if (*fault != kNoFault) return;
  const int64_t total = rows * count;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    out[i] = in[(i / count) * cols + columns[i % count]];
  }
}

__global__ void iota_kernel(int64_t* out, int64_t count) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    out[i] = i;
  }
}

// The positions 0..n-1 of `indices` ordered by index, equal indices in position order:
// sorted_keys[s] = indices[positions[s]], both [n] i64 on the device of `indices`.
struct IndexRuns {
  Tensor sorted_keys, positions;
};

IndexRuns sort_by_index(const Tensor& indices, int64_t numel, const char* op) {
  const int64_t count = indices.numel();
  const Device device = indices.device();
  cudaStream_t s = stream(device.index);
  VITUNE_CHECK(count <= INT_MAX, op, ": ", count, " indices are more than the sort handles (2^31 - 1)");
  Tensor order({count}, DType::I64, device);
  iota_kernel<<<blocks_for(count), kThreads, 0, s>>>(order.kernel_data<int64_t>(), count);
  check_launch("iota_kernel");
  IndexRuns runs{Tensor({count}, DType::I64, device), Tensor({count}, DType::I64, device)};
  // Every index lies in [0, numel): only the low bits that can differ take part.
  int bits = 1;
  while (bits < 63 && (int64_t(1) << bits) < numel) ++bits;
  const int64_t* keys_in = indices.kernel_data<int64_t>();
  int64_t* keys_out = runs.sorted_keys.kernel_data<int64_t>();
  const int64_t* values_in = order.kernel_data<int64_t>();
  int64_t* values_out = runs.positions.kernel_data<int64_t>();
  size_t scratch_bytes = 0;
  VITUNE_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, scratch_bytes, keys_in, keys_out, values_in,
                                                    values_out, int(count), 0, bits, s));
  Tensor scratch({int64_t(scratch_bytes > 0 ? scratch_bytes : 1)}, DType::U8, device);
  VITUNE_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(scratch.kernel_raw(), scratch_bytes, keys_in, keys_out, values_in,
                                                    values_out, int(count), 0, bits, s));
  check_launch("cub::DeviceRadixSort::SortPairs");
  return runs;
}

// For each run of equal indices, the value at its last position (the one the CPU's
// sequential loop writes last) is stored.
template <typename W>
__global__ void scatter_runs_kernel(const int64_t* sorted_keys, const int64_t* positions, int64_t count,
                                    const W* values, const unsigned long long* fault, W* out) {
  if (*fault != kNoFault) return;
  for (int64_t s = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; s < count;
       s += int64_t(gridDim.x) * blockDim.x) {
    const bool last_of_run = s + 1 == count || sorted_keys[s + 1] != sorted_keys[s];
    if (last_of_run) out[sorted_keys[s]] = values[positions[s]];
  }
}

// For each run of equal indices, the thread of its first entry adds the run's values to
// out[index] one at a time in position order: the CPU's sequence of += on that element.
template <typename T>
__global__ void scatter_add_runs_kernel(const int64_t* sorted_keys, const int64_t* positions, int64_t count,
                                        const T* values, const unsigned long long* fault, T* out) {
  if (*fault != kNoFault) return;
  for (int64_t s = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; s < count;
       s += int64_t(gridDim.x) * blockDim.x) {
    const int64_t key = sorted_keys[s];
    if (s > 0 && sorted_keys[s - 1] == key) continue;
    T sum = out[key];
    for (int64_t e = s; e < count && sorted_keys[e] == key; ++e) sum += values[positions[e]];
    out[key] = sum;
  }
}

}  // namespace

Tensor gather(const Tensor& x, const Tensor& indices) {
  check_on_cuda(x, "gather");
  const unsigned long long* fault = check_indices(indices, x.numel(), x, "gather");
  Tensor out(indices.shape(), x.dtype(), x.device());
  const int64_t count = indices.numel();
  if (count == 0) return out;
  cudaStream_t s = stream(x.device().index);
  op_checks::dispatch_width(x.dtype(), [&](auto zero) {
    using W = decltype(zero);
    gather_kernel<W><<<blocks_for(count), kThreads, 0, s>>>(static_cast<const W*>(x.kernel_raw()),
                                                            indices.kernel_data<int64_t>(), count, fault,
                                                            static_cast<W*>(out.kernel_raw()));
    check_launch("gather_kernel");
  });
  return out;
}

Tensor gather_columns(const Tensor& x, const Tensor& columns) {
  const char* op = "gather_columns";
  check_on_cuda(x, op);
  const op_checks::Columns s = op_checks::gather_columns_shape(x, columns, op);
  const unsigned long long* fault = check_indices(columns, s.cols, x, op);
  const int64_t count = columns.numel();
  Tensor out({s.rows, count}, x.dtype(), x.device());
  if (out.numel() == 0) return out;
  cudaStream_t queue = stream(x.device().index);
  op_checks::dispatch_width(x.dtype(), [&](auto zero) {
    using W = decltype(zero);
    gather_columns_kernel<W><<<blocks_for(out.numel()), kThreads, 0, queue>>>(
        static_cast<const W*>(x.kernel_raw()), s.rows, s.cols, columns.kernel_data<int64_t>(), count, fault,
        static_cast<W*>(out.kernel_raw()));
    check_launch("gather_columns_kernel");
  });
  return out;
}

void scatter(Tensor& x, const Tensor& indices, const Tensor& values) {
  const unsigned long long* fault = check_scatter_args(x, indices, values, "scatter");
  const int64_t count = indices.numel();
  if (count == 0) return;
  const IndexRuns runs = sort_by_index(indices, x.numel(), "scatter");
  cudaStream_t s = stream(x.device().index);
  op_checks::dispatch_width(x.dtype(), [&](auto zero) {
    using W = decltype(zero);
    scatter_runs_kernel<W><<<blocks_for(count), kThreads, 0, s>>>(
        runs.sorted_keys.kernel_data<int64_t>(), runs.positions.kernel_data<int64_t>(), count,
        static_cast<const W*>(values.kernel_raw()), fault, static_cast<W*>(x.kernel_raw()));
    check_launch("scatter_runs_kernel");
  });
}

void scatter_add(Tensor& x, const Tensor& indices, const Tensor& values) {
  check_cuda_float(x, "scatter_add");
  const unsigned long long* fault = check_scatter_args(x, indices, values, "scatter_add");
  const int64_t count = indices.numel();
  if (count == 0) return;
  const IndexRuns runs = sort_by_index(indices, x.numel(), "scatter_add");
  cudaStream_t s = stream(x.device().index);
  dispatch_float(x, "scatter_add", [&](auto zero) {
    using T = decltype(zero);
    scatter_add_runs_kernel<T><<<blocks_for(count), kThreads, 0, s>>>(
        runs.sorted_keys.kernel_data<int64_t>(), runs.positions.kernel_data<int64_t>(), count, values.kernel_data<T>(),
        fault, x.kernel_data<T>());
    check_launch("scatter_add_runs_kernel");
  });
}

}  // namespace vitune::cuda
