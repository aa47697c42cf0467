// Counter-based random numbers (Philox-4x32-10). The value at position `index` of
// stream `stream` under `seed` is a pure function of the three: any thread can make
// any element, so random tensors are the same whatever the thread count or split.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/tensor.h"

namespace vitune {

// Four 32-bit random words for one counter.
struct PhiloxBlock {
  uint32_t word[4];
};
PhiloxBlock philox(uint64_t seed, uint64_t stream, uint64_t index);
// The Philox-4x32-10 bijection on raw words. philox(seed, stream, index) is this with
// counter = (index low, index high, stream low, stream high), key = (seed low, seed high).
PhiloxBlock philox_raw(const uint32_t counter[4], const uint32_t key[2]);

// Uniform in [0, 1) with 24 random bits (float) for element `index`.
float uniform01(uint64_t seed, uint64_t stream, uint64_t index);
// Standard normal for element `index` (Box-Muller on the block's words).
float standard_normal(uint64_t seed, uint64_t stream, uint64_t index);

// Fills a float tensor (f32 or f64), element i from counter i.
void fill_uniform(Tensor& t, uint64_t seed, uint64_t stream, double low, double high);
void fill_normal(Tensor& t, uint64_t seed, uint64_t stream, double mean, double stddev);
// Normal with mean 0 truncated to [-2 std, 2 std] by redrawing from later counters.
// (timm's trunc_normal_(std=0.02) cuts at +-2 absolute, which in practice never cuts;
// cutting at 2 std keeps initial weights from rare outliers.)
void fill_trunc_normal(Tensor& t, uint64_t seed, uint64_t stream, double stddev);

// A permutation of [0, n) (Fisher-Yates driven by counters), for shuffling.
std::vector<int64_t> permutation(int64_t n, uint64_t seed, uint64_t stream);

}  // namespace vitune
