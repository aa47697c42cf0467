// CPU top-k per row: the k largest entries of each row of [R, C] in descending order,
// ties to the lower column index, NaN never selected. Rows are independent and run in
// parallel. Within a row, one pass in column order keeps the best k seen so far in a
// heap whose top is the worst of them; most entries cost one comparison with that top,
// so a row costs O(C) for typical data and O(C log k) at worst, never a full sort.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "engine/cpu/check.h"
#include "engine/ops.h"
#include "engine/parallel.h"

namespace vitune::cpu {

// values and indices are (re)assigned to new tensors [R, k] of x's dtype and i64.
void topk_rows(const Tensor& x, int64_t k, Tensor& values, Tensor& indices) {
  cpu::check_float(x, "topk_rows");
  VITUNE_CHECK(x.ndim() == 2, "topk_rows: expected a 2-D tensor [R, C], got ", x.str());
  const int64_t rows = x.dim(0);
  const int64_t cols = x.dim(1);
  VITUNE_CHECK(k >= 0 && k <= cols, "topk_rows: k = ", k, " outside [0, ", cols, "] for ",
               x.str());
  values = Tensor({rows, k}, x.dtype(), x.device());
  indices = Tensor({rows, k}, DType::I64, x.device());
  if (rows == 0 || k == 0) return;
  cpu::dispatch_float(x, "topk_rows", [&](auto zero) {
    using T = decltype(zero);
    const T* in = x.kernel_data<T>();
    T* out_values = values.kernel_data<T>();
    int64_t* out_indices = indices.kernel_data<int64_t>();
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, cols));
    parallel_for(rows, grain, [&](int64_t begin, int64_t end) {
      std::vector<int64_t> best;
      best.reserve(size_t(k));
      for (int64_t r = begin; r < end; ++r) {
        const T* line = in + r * cols;
        // Strict total order on non-NaN columns: larger value first, then lower index.
        // As the heap's "less", it puts the worst kept column on top.
        auto before = [line](int64_t a, int64_t b) {
          return line[a] > line[b] || (line[a] == line[b] && a < b);
        };
        best.clear();
        for (int64_t c = 0; c < cols; ++c) {
          if (line[c] != line[c]) continue;  // NaN
          if (int64_t(best.size()) < k) {
            best.push_back(c);
            std::push_heap(best.begin(), best.end(), before);
          } else if (line[c] > line[best.front()]) {
            // A later column equal to the worst kept one loses the tie, so > suffices.
            std::pop_heap(best.begin(), best.end(), before);
            best.back() = c;
            std::push_heap(best.begin(), best.end(), before);
          }
        }
        std::sort_heap(best.begin(), best.end(), before);
        const int64_t chosen = int64_t(best.size());
        T* row_values = out_values + r * k;
        int64_t* row_indices = out_indices + r * k;
        for (int64_t i = 0; i < chosen; ++i) {
          row_indices[i] = best[size_t(i)];
          row_values[i] = line[best[size_t(i)]];
        }
        for (int64_t i = chosen; i < k; ++i) {
          row_indices[i] = -1;
          row_values[i] = std::numeric_limits<T>::quiet_NaN();
        }
      }
    });
  });
}

}  // namespace vitune::cpu
