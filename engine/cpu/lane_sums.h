// Sums in double whose order is fixed by the data's shape alone, written so that the
// compiler vectorises them. A single running sum forces one dependent add after another
// (a 64-float row then costs 64 add latencies); these keep independent partial sums
// and combine them in a fixed order at the end, so the bits never depend on the thread
// count. Used inside parallel_for_simd bodies (engine/cpu/isa.h), which compile them at
// each instruction-set level.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/cpu/isa.h"

namespace vitune::cpu {

// Interleaved partial sums of lane_sum: two AVX-512 registers of doubles.
constexpr int64_t kSumLanes = 16;

// sum_{i < n} term(i): term(i) goes into partial sum i mod kSumLanes, in order of i;
// the partial sums are then added in lane order.
template <typename Term>
__attribute__((always_inline)) inline double lane_sum(int64_t n, const Term& term) {
  double lanes[kSumLanes] = {};
  const int64_t full = n / kSumLanes * kSumLanes;
  for (int64_t i = 0; i < full; i += kSumLanes) {
    for (int64_t l = 0; l < kSumLanes; ++l) lanes[l] += term(i + l);
  }
  for (int64_t i = full; i < n; ++i) lanes[i - full] += term(i);
  double sum = 0;
  for (int64_t l = 0; l < kSumLanes; ++l) sum += lanes[l];
  return sum;
}

// Rows of a row reduction summed by one task, in row order.
constexpr int64_t kRowChunk = 256;

// Column sums over rows, spread over threads in a fixed order: for each of `sums`
// quantities and each column c < width, the sum over r < rows of what
// add_row(r, partial) adds to partial[q * width + c]. The rows are cut into chunks of
// kRowChunk; a task forms one chunk's sums in row order (in double), and the chunks'
// sums are added in chunk order. The chunks do not depend on the thread count, so
// neither do the bits. Returns the `sums * width` totals.
template <typename AddRow>
std::vector<double> chunked_column_sums(int64_t rows, int64_t width, int64_t sums, const AddRow& add_row) {
  const int64_t chunks = (rows + kRowChunk - 1) / kRowChunk, stride = sums * width;
  std::vector<double> partial(size_t(std::max<int64_t>(chunks, 1) * stride), 0.0);
  parallel_for_simd(chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      double* into = partial.data() + chunk * stride;
      const int64_t last = std::min(rows, (chunk + 1) * kRowChunk);
      for (int64_t r = chunk * kRowChunk; r < last; ++r) add_row(r, into);
    }
  });
  for (int64_t chunk = 1; chunk < chunks; ++chunk) {
    const double* from = partial.data() + chunk * stride;
    for (int64_t i = 0; i < stride; ++i) partial[size_t(i)] += from[i];
  }
  partial.resize(size_t(stride));
  return partial;
}

}  // namespace vitune::cpu
