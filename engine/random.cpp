// Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", 2011)
// and the distributions built on it. Every value is a pure function of (seed, stream,
// index), so filling a tensor in parallel gives the same bits for any thread count.
#include "engine/random.h"

#include <cmath>
#include <utility>

#include "engine/parallel.h"

namespace vitune {

namespace {

constexpr uint32_t kMultiplier0 = 0xD2511F53u;
constexpr uint32_t kMultiplier1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;
constexpr uint32_t kWeyl1 = 0xBB67AE85u;
constexpr int kRounds = 10;

// Elements per parallel chunk of the fills.
constexpr int64_t kFillGrain = int64_t(1) << 14;

constexpr double kTwoPi = 6.283185307179586476925286766559;
constexpr double kTwoToMinus24 = 1.0 / 16777216.0;
constexpr double kTwoToMinus32 = 1.0 / 4294967296.0;

// One Philox round: two 32x32 -> 64-bit products mixed with the other words and the key.
void philox_round(uint32_t ctr[4], const uint32_t key[2]) {
  const uint64_t product0 = uint64_t(kMultiplier0) * ctr[0];
  const uint64_t product1 = uint64_t(kMultiplier1) * ctr[2];
  const uint32_t hi0 = uint32_t(product0 >> 32), lo0 = uint32_t(product0);
  const uint32_t hi1 = uint32_t(product1 >> 32), lo1 = uint32_t(product1);
  const uint32_t next[4] = {hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0};
  for (int i = 0; i < 4; ++i) ctr[i] = next[i];
}

// The standard normal from one block's first two words, in double (Box-Muller).
double box_muller(const PhiloxBlock& block) {
  const double u1 = (double(block.word[0]) + 1.0) * kTwoToMinus32;  // (0, 1]: log is finite
  const double u2 = double(block.word[1]) * kTwoToMinus32;          // [0, 1)
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

// Uniform integer in [0, range), range >= 1, for the swap at `position` of a
// permutation of n: the 64-bit words (word[1]:word[0]) and (word[3]:word[2]) of counter
// position, then of position + n, position + 2n, ... scaled by multiply-shift, and a
// word whose low product part falls below 2^64 mod range is rejected (Lemire, 2019), so
// every result is exactly equally likely.
uint64_t bounded_draw(uint64_t seed, uint64_t stream, uint64_t position, uint64_t n,
                      uint64_t range) {
  const uint64_t threshold = (0 - range) % range;
  for (uint64_t draw = 0;; ++draw) {
    const PhiloxBlock block = philox(seed, stream, position + (draw / 2) * n);
    const int first = draw % 2 == 0 ? 0 : 2;
    const uint64_t word = (uint64_t(block.word[first + 1]) << 32) | block.word[first];
    const unsigned __int128 product = (unsigned __int128)word * range;
    if (uint64_t(product) >= threshold) return uint64_t(product >> 64);
  }
}

// t[i] = value(i) for every element of a float tensor, in parallel. The values are
// drawn on the host and copied to t's device when it has another.
template <typename Value>
void fill_each(Tensor& t, const char* op, Value value) {
  Tensor host = t.device().is_cpu() ? t : Tensor(t.shape(), t.dtype(), Device::cpu());
  on_float_dtype(host, op, [&](auto zero) {
    using T = decltype(zero);
    T* out = host.data<T>();
    parallel_for(host.numel(), kFillGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = T(value(uint64_t(i)));
    });
  });
  if (!host.same_storage(t)) t.copy_from(host);
}

}  // namespace

PhiloxBlock philox_raw(const uint32_t counter[4], const uint32_t key[2]) {
  PhiloxBlock block{{counter[0], counter[1], counter[2], counter[3]}};
  uint32_t round_key[2] = {key[0], key[1]};
  for (int round = 0; round < kRounds; ++round) {
    if (round > 0) {
      round_key[0] += kWeyl0;
      round_key[1] += kWeyl1;
    }
    philox_round(block.word, round_key);
  }
  return block;
}

PhiloxBlock philox(uint64_t seed, uint64_t stream, uint64_t index) {
  const uint32_t counter[4] = {uint32_t(index), uint32_t(index >> 32), uint32_t(stream),
                               uint32_t(stream >> 32)};
  const uint32_t key[2] = {uint32_t(seed), uint32_t(seed >> 32)};
  return philox_raw(counter, key);
}

float uniform01(uint64_t seed, uint64_t stream, uint64_t index) {
  return float(double(philox(seed, stream, index).word[0] >> 8) * kTwoToMinus24);
}

float standard_normal(uint64_t seed, uint64_t stream, uint64_t index) {
  return float(box_muller(philox(seed, stream, index)));
}

void fill_uniform(Tensor& t, uint64_t seed, uint64_t stream, double low, double high) {
  VITUNE_CHECK(low <= high, "fill_uniform: low ", low, " is above high ", high);
  fill_each(t, "fill_uniform", [&](uint64_t i) {
    return low + (high - low) * double(uniform01(seed, stream, i));
  });
}

void fill_normal(Tensor& t, uint64_t seed, uint64_t stream, double mean, double stddev) {
  VITUNE_CHECK(stddev >= 0, "fill_normal: stddev must be non-negative, got ", stddev);
  fill_each(t, "fill_normal", [&](uint64_t i) {
    return mean + stddev * double(standard_normal(seed, stream, i));
  });
}

void fill_trunc_normal(Tensor& t, uint64_t seed, uint64_t stream, double stddev) {
  VITUNE_CHECK(stddev >= 0, "fill_trunc_normal: stddev must be non-negative, got ", stddev);
  const uint64_t n = uint64_t(t.numel());
  fill_each(t, "fill_trunc_normal", [&](uint64_t i) {
    // Draw from counters i, i + n, i + 2n, ... until one lies within two deviations.
    for (uint64_t counter = i;; counter += n) {
      const double z = double(standard_normal(seed, stream, counter));
      if (std::fabs(z) <= 2.0) return stddev * z;
    }
  });
}

std::vector<int64_t> permutation(int64_t n, uint64_t seed, uint64_t stream) {
  VITUNE_CHECK(n >= 0, "permutation: length must be non-negative, got ", n);
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[size_t(i)] = i;
  // Fisher-Yates from the last position down: position i swaps with a uniform j <= i.
  for (int64_t i = n - 1; i > 0; --i) {
    const uint64_t j = bounded_draw(seed, stream, uint64_t(i), uint64_t(n), uint64_t(i) + 1);
    std::swap(order[size_t(i)], order[size_t(j)]);
  }
  return order;
}

}  // namespace vitune
