// CPU elementwise ops: add, mul, scale, axpy and the bias broadcast over rows.
// Each output element depends on its own inputs only, so any split over threads gives
// the same bits.
#include <algorithm>
#include <cstdint>

#include "engine/cpu/check.h"
#include "engine/cpu/isa.h"
#include "engine/op_checks.h"
#include "engine/ops.h"

namespace vitune::cpu {

namespace {

// Elements per parallel chunk: large enough that waking a thread pays for itself.
constexpr int64_t kElementGrain = int64_t(1) << 15;

// out[i] = combine(a[i], b[i]) over all elements, in parallel.
template <typename T, typename Combine>
void map2(const T* a, const T* b, T* out, int64_t n, Combine combine) {
  parallel_for_simd(n, kElementGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = combine(a[i], b[i]);
  });
}

void check_binary(const Tensor& a, const Tensor& b, const char* op) {
  cpu::check_float(a, op);
  cpu::check_float(b, op);
  cpu::check_same(a, b, op);
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  check_binary(a, b, "add");
  Tensor out(a.shape(), a.dtype(), a.device());
  cpu::dispatch_float(a, "add", [&](auto zero) {
    using T = decltype(zero);
    map2(a.kernel_data<T>(), b.kernel_data<T>(), out.kernel_data<T>(), a.numel(), [](T u, T v) { return u + v; });
  });
  return out;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  check_binary(a, b, "mul");
  Tensor out(a.shape(), a.dtype(), a.device());
  cpu::dispatch_float(a, "mul", [&](auto zero) {
    using T = decltype(zero);
    map2(a.kernel_data<T>(), b.kernel_data<T>(), out.kernel_data<T>(), a.numel(), [](T u, T v) { return u * v; });
  });
  return out;
}

Tensor scale(const Tensor& a, double factor) {
  cpu::check_float(a, "scale");
  Tensor out(a.shape(), a.dtype(), a.device());
  cpu::dispatch_float(a, "scale", [&](auto zero) {
    using T = decltype(zero);
    const T* in = a.kernel_data<T>();
    T* result = out.kernel_data<T>();
    const T f = T(factor);
    parallel_for_simd(a.numel(), kElementGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) result[i] = in[i] * f;
    });
  });
  return out;
}

void axpy(double alpha, const Tensor& x, Tensor& y) {
  check_binary(x, y, "axpy");
  cpu::dispatch_float(x, "axpy", [&](auto zero) {
    using T = decltype(zero);
    const T* in = x.kernel_data<T>();
    T* acc = y.kernel_data<T>();
    const T a = T(alpha);
    parallel_for_simd(x.numel(), kElementGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) acc[i] += a * in[i];
    });
  });
}

void add_row_broadcast(Tensor& x, const Tensor& row) {
  cpu::check_float(x, "add_row_broadcast");
  cpu::check_float(row, "add_row_broadcast");
  const int64_t cols = op_checks::last_dim_vector(x, row, "row", "add_row_broadcast");
  if (cols == 0) return;
  const int64_t rows = x.numel() / cols;
  cpu::dispatch_float(x, "add_row_broadcast", [&](auto zero) {
    using T = decltype(zero);
    T* out = x.kernel_data<T>();
    const T* bias = row.kernel_data<T>();
    const int64_t grain = std::max<int64_t>(1, kElementGrain / cols);
    parallel_for_simd(rows, grain, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        T* line = out + r * cols;
        for (int64_t c = 0; c < cols; ++c) line[c] += bias[c];
      }
    });
  });
}

}  // namespace vitune::cpu
