// CPU gradient of a linear layer's weight at selected entries only. For y = x W^T with
// x [T, in], dy [T, out] and the entry e = j*in + k of W [out, in]:
//   dW[j, k] = sum_t dy[t, j] * x[t, k].
// The tokens are taken in fixed chunks of kTokenChunk. For each chunk, dy and x are
// transposed into column-major scratch ([out, chunk] and [in, chunk]), so that every
// selected entry adds one contiguous dot product to its double running sum. The cost
// is O(T * (in + out) + T * selected) and the scratch is small and reused: the dense
// [out, in] gradient and full-size transposed copies of dy and x are never formed.
#include <algorithm>
#include <cstdint>

#include "engine/cpu/check.h"
#include "engine/cpu/isa.h"
#include "engine/flop_counter.h"
#include "engine/op_checks.h"
#include "engine/ops.h"

namespace vitune::cpu {

namespace {

// Side of the square tiles in which the transpose moves elements.
constexpr int64_t kTile = 32;

// Tokens per chunk: a chunk of x's transposed columns ([in, chunk]) stays in cache
// while the selected entries of all rows j read it.
constexpr int64_t kTokenChunk = 256;

// Independent partial sums of the dot product, added together at the end: enough
// of them to keep the vector units busy; a fixed number, so the result is the same
// on every run and thread count.
constexpr int kLanes = 16;

// dst [cols, rows] = src [rows, cols]^T, tiled so that both sides stay in cache.
template <typename T>
void transpose(const T* src, int64_t rows, int64_t cols, T* dst) {
  const int64_t col_tiles = (cols + kTile - 1) / kTile;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, rows * kTile));
  parallel_for_simd(col_tiles, grain, [&](int64_t begin, int64_t end) {
    for (int64_t tile = begin; tile < end; ++tile) {
      const int64_t c0 = tile * kTile;
      const int64_t c1 = std::min(cols, c0 + kTile);
      for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
        const int64_t r1 = std::min(rows, r0 + kTile);
        for (int64_t c = c0; c < c1; ++c) {
          for (int64_t r = r0; r < r1; ++r) dst[c * rows + r] = src[r * cols + c];
        }
      }
    }
  });
}

// sum_t a[t] * b[t] in double: lane l sums the terms t = l (mod kLanes) of the whole
// blocks in order, the lanes are added in order, then the tail terms in order.
template <typename T>
double dot(const T* a, const T* b, int64_t n) {
  double lanes[kLanes] = {};
  int64_t t = 0;
  for (; t + kLanes <= n; t += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] += double(a[t + l]) * double(b[t + l]);
  }
  double sum = 0.0;
  for (int l = 0; l < kLanes; ++l) sum += lanes[l];
  for (; t < n; ++t) sum += double(a[t]) * double(b[t]);
  return sum;
}

// Indices must be strictly increasing and inside [0, out * in).
void check_selection(const Tensor& indices, int64_t out_features, int64_t in_features) {
  const int64_t* idx = indices.kernel_data<int64_t>();
  const int64_t limit = out_features * in_features;
  for (int64_t i = 0; i < indices.numel(); ++i) {
    VITUNE_CHECK(idx[i] >= 0 && idx[i] < limit, "masked_weight_grad: index ", idx[i],
                 " at position ", i, " is outside [0, ", limit, ") for a weight [", out_features,
                 ", ", in_features, "]");
    VITUNE_CHECK(i == 0 || idx[i] > idx[i - 1], "masked_weight_grad: indices must be sorted and "
                 "unique, but position ", i, " holds ", idx[i], " after ", idx[i - 1]);
  }
}

}  // namespace

// Math: y[t, j] = sum_k x[t, k] W[j, k], so for a loss L with dy = dL/dy,
//   dL/dW[j, k] = sum_t dL/dy[t, j] * dy[t, j]/dW[j, k] = sum_t dy[t, j] * x[t, k],
// the entry (j, k) of dy^T x, evaluated here only at the selected (j, k).
void masked_weight_grad(const Tensor& dy, const Tensor& x, const Tensor& indices,
                        int64_t in_features, Tensor& accumulate) {
  const char* op = "masked_weight_grad";
  cpu::check_float(dy, op);
  cpu::check_float(x, op);
  cpu::check_float(accumulate, op);
  cpu::check_host(indices, op);
  const op_checks::MaskedGradShape shape =
      op_checks::masked_grad_shape(dy, x, indices, in_features, accumulate, op);
  const int64_t out_features = shape.out_features, tokens = shape.tokens;
  check_selection(indices, out_features, in_features);
  const int64_t selected = indices.numel();
  if (selected == 0 || tokens == 0) return;
  count_flops(2 * tokens * selected);

  cpu::dispatch_float(x, op, [&](auto zero) {
    using T = decltype(zero);
    const int64_t chunk = std::min(tokens, kTokenChunk);
    Tensor dy_t({out_features, chunk}, dy.dtype(), dy.device());
    Tensor x_t({in_features, chunk}, x.dtype(), x.device());
    Tensor sums = Tensor::zeros({selected}, DType::F64, dy.device());
    const T* dy_rows = dy.kernel_data<T>();
    const T* x_rows = x.kernel_data<T>();
    const T* dy_cols = dy_t.kernel_data<T>();
    const T* x_cols = x_t.kernel_data<T>();
    const int64_t* idx = indices.kernel_data<int64_t>();
    double* sum = sums.kernel_data<double>();
    const int64_t grain = std::max<int64_t>(1, 8192 / chunk);
    // Chunks in token order; within a chunk every entry is computed by one task.
    for (int64_t t0 = 0; t0 < tokens; t0 += chunk) {
      const int64_t n = std::min(chunk, tokens - t0);
      transpose(dy_rows + t0 * out_features, n, out_features, dy_t.kernel_data<T>());
      transpose(x_rows + t0 * in_features, n, in_features, x_t.kernel_data<T>());
      parallel_for_simd(selected, grain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const int64_t j = idx[i] / in_features;
          const int64_t k = idx[i] % in_features;
          sum[i] += dot(dy_cols + j * n, x_cols + k * n, n);
        }
      });
    }
    T* acc = accumulate.kernel_data<T>();
    for (int64_t i = 0; i < selected; ++i) acc[i] += T(sum[i]);
  });
}

}  // namespace vitune::cpu
