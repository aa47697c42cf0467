// CPU gather and scatter through flat i64 indices, and gather_columns through column
// numbers. Every index is checked (against [0, numel), or [0, columns)) before anything
// is read or written, so a bad index leaves x untouched. gather, gather_columns and
// scatter move elements of any dtype; scatter_add adds float elements. Both scatters run
// serially in index order: with repeated indices scatter keeps the last value and
// scatter_add adds them in order, the same on every run.
#include <algorithm>
#include <cstdint>

#include "engine/cpu/check.h"
#include "engine/op_checks.h"
#include "engine/ops.h"
#include "engine/parallel.h"

namespace vitune::cpu {

namespace {

void check_indices(const Tensor& indices, int64_t numel, const Tensor& x, const char* op) {
  cpu::check_host(indices, op);
  op_checks::check_index_dtype(indices, op);
  const int64_t* idx = indices.kernel_data<int64_t>();
  for (int64_t i = 0; i < indices.numel(); ++i) {
    VITUNE_CHECK(idx[i] >= 0 && idx[i] < numel, op, ": index ", idx[i], " at position ", i,
                 " is outside [0, ", numel, ") for ", x.str());
  }
}

void check_scatter_args(const Tensor& x, const Tensor& indices, const Tensor& values,
                        const char* op) {
  cpu::check_host(x, op);
  cpu::check_host(values, op);
  op_checks::check_scatter_values(x, indices, values, op);
  check_indices(indices, x.numel(), x, op);
}

}  // namespace

Tensor gather(const Tensor& x, const Tensor& indices) {
  cpu::check_host(x, "gather");
  check_indices(indices, x.numel(), x, "gather");
  Tensor out(indices.shape(), x.dtype(), x.device());
  const int64_t* idx = indices.kernel_data<int64_t>();
  op_checks::dispatch_width(x.dtype(), [&](auto zero) {
    using W = decltype(zero);
    const W* in = static_cast<const W*>(x.kernel_raw());
    W* result = static_cast<W*>(out.kernel_raw());
    parallel_for(indices.numel(), 1 << 14, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) result[i] = in[idx[i]];
    });
  });
  return out;
}

Tensor gather_columns(const Tensor& x, const Tensor& columns) {
  const char* op = "gather_columns";
  cpu::check_host(x, op);
  const op_checks::Columns s = op_checks::gather_columns_shape(x, columns, op);
  check_indices(columns, s.cols, x, op);
  const int64_t count = columns.numel();
  Tensor out = Tensor::like(x, {s.rows, count});
  if (out.numel() == 0) return out;
  const int64_t* column = columns.kernel_data<int64_t>();
  op_checks::dispatch_width(x.dtype(), [&](auto zero) {
    using W = decltype(zero);
    const W* in = static_cast<const W*>(x.kernel_raw());
    W* result = static_cast<W*>(out.kernel_raw());
    parallel_for(s.rows, std::max<int64_t>(1, (1 << 14) / count), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        for (int64_t q = 0; q < count; ++q) result[r * count + q] = in[r * s.cols + column[q]];
      }
    });
  });
  return out;
}

void scatter(Tensor& x, const Tensor& indices, const Tensor& values) {
  check_scatter_args(x, indices, values, "scatter");
  const int64_t* idx = indices.kernel_data<int64_t>();
  op_checks::dispatch_width(x.dtype(), [&](auto zero) {
    using W = decltype(zero);
    W* out = static_cast<W*>(x.kernel_raw());
    const W* in = static_cast<const W*>(values.kernel_raw());
    for (int64_t i = 0; i < indices.numel(); ++i) out[idx[i]] = in[i];
  });
}

void scatter_add(Tensor& x, const Tensor& indices, const Tensor& values) {
  cpu::check_float(x, "scatter_add");
  check_scatter_args(x, indices, values, "scatter_add");
  const int64_t* idx = indices.kernel_data<int64_t>();
  cpu::dispatch_float(x, "scatter_add", [&](auto zero) {
    using T = decltype(zero);
    T* out = x.kernel_data<T>();
    const T* in = values.kernel_data<T>();
    for (int64_t i = 0; i < indices.numel(); ++i) out[idx[i]] += in[i];
  });
}

}  // namespace vitune::cpu
