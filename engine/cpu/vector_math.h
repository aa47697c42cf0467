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

// The scaled complementary error function erfcx(z) = e^(z^2) erfc(z) for z >= 0, as
// t Q(t) with t = 1 / (1 + z/2) in (0, 1]: Q is smooth in t, and a degree-9 polynomial in
// s = t - 0.585 (tools/fit_erfcx.py: a least-squares fit for relative error on Chebyshev
// nodes of t in [0.17, 1], so z up to 9.8, past which e^(-z^2) erfcx(z) is below the
// smallest normal float) matches it within 2.1e-8. In floats, with t's division, within
// 3e-7.
inline Floats erfcx_nonnegative(Floats z) {
  const Floats t = 1.0f / (1.0f + 0.5f * z);
  const Floats s = t - 0.585f;
  Floats q = s * 0.014263695f - 0.058416963f;
  q = q * s + 0.0027007256f;
  q = q * s + 0.11189469f;
  q = q * s - 0.048397016f;
  q = q * s - 0.20446454f;
  q = q * s + 0.08107672f;
  q = q * s + 0.5880978f;
  q = q * s + 0.7848935f;
  q = q * s + 0.5733185f;
  return t * q;
}

// The standard normal CDF Phi(x) = e^(-x^2 / 2) erfcx(|x| / sqrt 2) / 2 for negative x and
// 1 minus that for positive x, and the density phi(x) = e^(-x^2 / 2) / sqrt(2 pi) from the
// same exponential. Accurate in relative terms for negative x (a tiny number that
// 1 + erf(x / sqrt 2) would cancel away) and in absolute terms for positive x. The
// exponent x^2 / 2 is rounded once, from x itself, and its error grows with x^2: against
// double precision on 25,000 floats of [-12, 6], Phi was within 4.1e-6 of itself for x
// in [-12, -8], 1.1e-6 in [-8, -4] and 5e-7 in [-4, 0], and within 4e-7 absolute above.
inline Floats normal_cdf(Floats x, Floats& pdf) {
  const Floats gauss = exp_nonpositive(-0.5f * (x * x));
  const Floats tail = 0.5f * gauss * erfcx_nonnegative((x < 0 ? -x : x) * 0.70710678118654752f);
  pdf = 0.39894228040143268f * gauss;
  return x < 0 ? tail : 1.0f - tail;
}

// Phi(x) alone.
inline Floats normal_cdf(Floats x) {
  Floats pdf;
  return normal_cdf(x, pdf);
}

}  // namespace vitune::cpu
