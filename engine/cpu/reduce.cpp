// CPU reductions: column sums over rows (the bias gradient), the sum and the sum of
// squares of all elements, and the finiteness test. Sums run in double in an order
// fixed by the data's shape alone, so the thread count never changes a result.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/cpu/check.h"
#include "engine/cpu/isa.h"
#include "engine/cpu/lane_sums.h"
#include "engine/op_checks.h"
#include "engine/ops.h"

namespace vitune::cpu {

namespace {

// Elements per block of sum_all / sum_squares. Each block is summed by lane_sum; the
// block sums are then added in block order. Fixed size, so independent of threads.
constexpr int64_t kSumBlock = 4096;

// Sum over blocks of sum_{i in block} term(v[i]), as described above.
template <typename T, typename Term>
double blocked_sum(const T* v, int64_t n, Term term) {
  const int64_t blocks = (n + kSumBlock - 1) / kSumBlock;
  std::vector<double> partial(size_t(blocks), 0.0);
  parallel_for_simd(blocks, 16, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const int64_t first = b * kSumBlock;
      const int64_t last = std::min(n, first + kSumBlock);
      partial[size_t(b)] = lane_sum(last - first, [&](int64_t i) { return term(double(v[first + i])); });
    }
  });
  double total = 0.0;
  for (double s : partial) total += s;
  return total;
}

}  // namespace

void sum_rows_into(const Tensor& x, Tensor& accumulate) {
  cpu::check_float(x, "sum_rows_into");
  cpu::check_float(accumulate, "sum_rows_into");
  const int64_t cols = op_checks::last_dim_vector(x, accumulate, "accumulate", "sum_rows_into");
  if (cols == 0) return;
  const int64_t rows = x.numel() / cols;
  cpu::dispatch_float(x, "sum_rows_into", [&](auto zero) {
    using T = decltype(zero);
    const T* in = x.kernel_data<T>();
    T* out = accumulate.kernel_data<T>();
    const std::vector<double> sums = chunked_column_sums(rows, cols, 1, [&](int64_t r, double* into) {
      const T* line = in + r * cols;
      for (int64_t c = 0; c < cols; ++c) into[c] += double(line[c]);
    });
    for (int64_t c = 0; c < cols; ++c) out[c] += T(sums[size_t(c)]);
  });
}

double sum_all(const Tensor& x) {
  return cpu::dispatch_float(x, "sum_all", [&](auto zero) {
    using T = decltype(zero);
    return blocked_sum(x.kernel_data<T>(), x.numel(), [](double v) { return v; });
  });
}

double sum_squares(const Tensor& x) {
  return cpu::dispatch_float(x, "sum_squares", [&](auto zero) {
    using T = decltype(zero);
    return blocked_sum(x.kernel_data<T>(), x.numel(), [](double v) { return v * v; });
  });
}

bool all_finite(const Tensor& x) {
  return cpu::dispatch_float(x, "all_finite", [&](auto zero) {
    using T = decltype(zero);
    const T* v = x.kernel_data<T>();
    const int64_t blocks = (x.numel() + kSumBlock - 1) / kSumBlock;
    std::vector<char> finite(size_t(blocks), 1);
    parallel_for_simd(blocks, 16, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        const int64_t first = b * kSumBlock;
        const int64_t last = std::min(x.numel(), first + kSumBlock);
        bool ok = true;
        for (int64_t i = first; i < last; ++i) ok &= std::isfinite(v[i]);
        finite[size_t(b)] = ok;
      }
    });
    return std::all_of(finite.begin(), finite.end(), [](char ok) { return ok != 0; });
  });
}

}  // namespace vitune::cpu
