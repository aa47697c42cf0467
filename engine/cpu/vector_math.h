// Vectorised float math shared by the CPU kernels: 16 floats at a time as one GCC/Clang
// vector (one AVX-512 register; the compiler splits it on narrower targets). The
// standard library's exp and erf are scalar calls that the compiler cannot vectorise;
// these run in registers at a few cycles per element. Callers use them inside
// parallel_for_simd (engine/cpu/isa.h), which inlines them at each instruction-set level.
#pragma once

#include <cstdint>
#include <cstring>

namespace vitune::cpu {

template <typename T>
struct Vector64 {
  typedef T type __attribute__((vector_size(64)));
};
using Floats = Vector64<float>::type;
using Ints = Vector64<int32_t>::type;
constexpr int64_t kFloatLanes = int64_t(sizeof(Floats) / sizeof(float));

inline Floats load_floats(const float* p) {
  Floats v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline void store_floats(float* p, Floats v) { std::memcpy(p, &v, sizeof v); }

// e^x for x <= 0 (NaN stays NaN). With n = round(x / ln 2) and r = x - n ln 2 (ln 2 split
// in two so that n times the high part is exact), |r| <= ln(2) / 2 and e^x = 2^n e^r;
// e^r by its Taylor series to degree 7 (truncation error below 1e-8 of the result) and
// 2^n written straight into the exponent bits. Within one ulp of exp; results below the
// smallest normal float (x < ln of it) are 0.
inline Floats exp_nonpositive(Floats x) {
  const float lowest = -87.33654475f;     // ln of the smallest normal float
  const float round_shift = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const Floats clamped = x < lowest ? lowest : x;
  const Floats n = (clamped * 1.44269504088896341f + round_shift) - round_shift;
  const Floats r = (clamped - n * 0.693145751953125f) - n * 1.428606765330187e-06f;
  Floats series = r * (1.0f / 5040) + 1.0f / 720;
  series = series * r + 1.0f / 120;
  series = series * r + 1.0f / 24;
  series = series * r + 1.0f / 6;
  series = series * r + 0.5f;
  series = series * r + 1.0f;
  series = series * r + 1.0f;
  const Ints exponent = (__builtin_convertvector(n, Ints) + 127) << 23;
  Floats power_of_two;
  std::memcpy(&power_of_two, &exponent, sizeof power_of_two);
  return x < lowest ? Floats{} : series * power_of_two;
}

// erfc(z) for z >= 0 with relative error below 1.2e-7 everywhere (the Chebyshev fit of
// Numerical Recipes' erfcc): erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z/2), P a
// degree-9 polynomial. Relative accuracy matters: the normal CDF of a negative x is
// erfc(|x| / sqrt 2) / 2, a tiny number that 1 - erf would cancel away.
inline Floats erfc_nonnegative(Floats z) {
  const Floats t = 1.0f / (1.0f + 0.5f * z);
  Floats p = t * 0.17087277f - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  return t * exp_nonpositive(p - z * z);
}

// The standard normal CDF Phi(x) = erfc(-x / sqrt 2) / 2, accurate in relative terms for
// negative x and in absolute terms (1 - tail) for positive x.
inline Floats normal_cdf(Floats x) {
  const Floats z = (x < 0 ? -x : x) * 0.70710678118654752f;
  const Floats tail = 0.5f * erfc_nonnegative(z);
  return x < 0 ? tail : 1.0f - tail;
}

}  // namespace vitune::cpu
