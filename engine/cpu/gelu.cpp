// GELU on the host in its exact form, y = x * Phi(x) with Phi the standard normal CDF
// (through erfc: std::erfc for doubles, cpu::normal_cdf for floats), and its backward
// pass.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/cpu/unary_op.h"
#include "engine/cpu/isa.h"
#include "engine/cpu/vector_math.h"
#include "engine/ops.h"
#include "engine/parallel.h"

namespace vitune::cpu {

namespace {

// Elements per parallel task: enough work to be worth a thread.
constexpr int64_t kGrain = 4096;

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

// Doubles (the finite-difference checks) through the standard library.
void forward_kernel(const double* x, int64_t n, double* y) {
  parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = x[i] * 0.5 * std::erfc(-x[i] * kInvSqrt2);
  });
}

void backward_kernel(const double* dy, const double* x, int64_t n, double* dx) {
  parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const double cdf = 0.5 * std::erfc(-x[i] * kInvSqrt2);
      const double pdf = kInvSqrt2Pi * std::exp(-0.5 * x[i] * x[i]);
      dx[i] = dy[i] * (cdf + x[i] * pdf);
    }
  });
}

// Floats 16 at a time through cpu::normal_cdf, which gives the density of the backward
// pass from the same exponential; the tail of a chunk that is not a whole vector goes
// through a zero-padded vector.
template <typename Body>
void for_float_vectors(int64_t n, const Body& body) {
  parallel_for_simd((n + cpu::kFloatLanes - 1) / cpu::kFloatLanes, kGrain / cpu::kFloatLanes,
                    [&](int64_t begin, int64_t end) {
                      for (int64_t v = begin; v < end; ++v) body(v * cpu::kFloatLanes);
                    });
}

cpu::Floats load_padded(const float* p, int64_t count) {
  if (count >= cpu::kFloatLanes) return cpu::load_floats(p);
  cpu::Floats v{};
  std::memcpy(&v, p, size_t(count) * sizeof(float));
  return v;
}

// A whole vector is one store; only the tail goes through a variable-length copy (a
// library call, which would otherwise run, with its register spills, for every vector).
void store_part(float* p, cpu::Floats v, int64_t count) {
  if (count >= cpu::kFloatLanes) return cpu::store_floats(p, v);
  std::memcpy(p, &v, size_t(count) * sizeof(float));
}

void forward_kernel(const float* x, int64_t n, float* y) {
  for_float_vectors(n, [&](int64_t i) {
    const cpu::Floats v = load_padded(x + i, n - i);
    store_part(y + i, v * cpu::normal_cdf(v), n - i);
  });
}

void backward_kernel(const float* dy, const float* x, int64_t n, float* dx) {
  for_float_vectors(n, [&](int64_t i) {
    const cpu::Floats v = load_padded(x + i, n - i);
    cpu::Floats pdf;
    const cpu::Floats cdf = cpu::normal_cdf(v, pdf);
    store_part(dx + i, load_padded(dy + i, n - i) * (cdf + v * pdf), n - i);
  });
}

}  // namespace

Tensor gelu_forward(const Tensor& x) {
  return unary_forward(x, "gelu_forward", [](const auto* x, int64_t n, auto* y) { forward_kernel(x, n, y); });
}

// Backward. y = x Phi(x) with Phi' = phi, the standard normal density
// phi(x) = exp(-x^2 / 2) / sqrt(2 pi), so dy/dx = Phi(x) + x phi(x) and dx = dy (Phi + x phi).
Tensor gelu_backward(const Tensor& dy, const Tensor& x) {
  return unary_backward(dy, x, "gelu_backward",
                        [](const auto* dy, const auto* x, int64_t n, auto* dx) { backward_kernel(dy, x, n, dx); });
}

}  // namespace vitune::cpu
