// CUDA elementwise ops: add, mul, scale, axpy and the bias broadcast over rows. One
// thread per element (grid-stride loops); each output element depends on its own inputs
// only, so the results never depend on the launch shape.
#include <cstdint>

#include "engine/cpu/check.h"
#include "engine/cuda/cuda_context.h"
#include "engine/op_checks.h"
#include "engine/ops.h"

namespace vitune::cuda {

namespace {

struct Add {
  template <typename T>
  __device__ T operator()(T u, T v) const { return u + v; }
};

struct Multiply {
  template <typename T>
  __device__ T operator()(T u, T v) const { return u * v; }
};

// out[i] = combine(a[i], b[i]).
template <typename T, typename Combine>
__global__ void map2_kernel(const T* a, const T* b, T* out, int64_t n, Combine combine) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    out[i] = combine(a[i], b[i]);
  }
}

template <typename T>
__global__ void scale_kernel(const T* in, T factor, T* out, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    out[i] = in[i] * factor;
  }
}

// y[i] += alpha * x[i].
template <typename T>
__global__ void axpy_kernel(T alpha, const T* x, T* y, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    y[i] += alpha * x[i];
  }
}

// x[i] += row[i % cols] over all n = rows * cols elements of x.
template <typename T>
__global__ void add_row_broadcast_kernel(T* x, const T* row, int64_t cols, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    x[i] += row[i % cols];
  }
}

// a and b are float tensors of one shape and dtype on one CUDA device; returns it.
int check_binary(const Tensor& a, const Tensor& b, const char* op) {
  check_cuda_float(a, op);
  check_cuda_float(b, op);
  cpu::check_same(a, b, op);
  return same_device({&a, &b}, op);
}

// out = combine(a, b) elementwise.
template <typename Combine>
Tensor map2(const Tensor& a, const Tensor& b, const char* op, Combine combine) {
  const int device = check_binary(a, b, op);
  Tensor out(a.shape(), a.dtype(), a.device());
  const int64_t n = a.numel();
  if (n == 0) return out;
  dispatch_float(a, op, [&](auto zero) {
    using T = decltype(zero);
    map2_kernel<T><<<blocks_for(n), kThreads, 0, stream(device)>>>(a.kernel_data<T>(), b.kernel_data<T>(),
                                                                   out.kernel_data<T>(), n, combine);
    check_launch("map2_kernel");
  });
  return out;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return map2(a, b, "add", Add{}); }

Tensor mul(const Tensor& a, const Tensor& b) { return map2(a, b, "mul", Multiply{}); }

Tensor scale(const Tensor& a, double factor) {
  const char* op = "scale";
  check_cuda_float(a, op);
  const int device = a.device().index;
  Tensor out(a.shape(), a.dtype(), a.device());
  const int64_t n = a.numel();
  if (n == 0) return out;
  dispatch_float(a, op, [&](auto zero) {
    using T = decltype(zero);
    scale_kernel<T><<<blocks_for(n), kThreads, 0, stream(device)>>>(a.kernel_data<T>(), T(factor),
                                                                    out.kernel_data<T>(), n);
    check_launch("scale_kernel");
  });
  return out;
}

void axpy(double alpha, const Tensor& x, Tensor& y) {
  const char* op = "axpy";
  const int device = check_binary(x, y, op);
  const int64_t n = x.numel();
  if (n == 0) return;
  dispatch_float(x, op, [&](auto zero) {
    using T = decltype(zero);
    axpy_kernel<T><<<blocks_for(n), kThreads, 0, stream(device)>>>(T(alpha), x.kernel_data<T>(),
                                                                   y.kernel_data<T>(), n);
    check_launch("axpy_kernel");
  });
}

void add_row_broadcast(Tensor& x, const Tensor& row) {
  const char* op = "add_row_broadcast";
  check_cuda_float(x, op);
  check_cuda_float(row, op);
  const int64_t cols = op_checks::last_dim_vector(x, row, "row", op);
  const int device = same_device({&x, &row}, op);
  const int64_t n = x.numel();
  if (cols == 0 || n == 0) return;
  dispatch_float(x, op, [&](auto zero) {
    using T = decltype(zero);
    add_row_broadcast_kernel<T><<<blocks_for(n), kThreads, 0, stream(device)>>>(
        x.kernel_data<T>(), row.kernel_data<T>(), cols, n);
    check_launch("add_row_broadcast_kernel");
  });
}

}  // namespace vitune::cuda
