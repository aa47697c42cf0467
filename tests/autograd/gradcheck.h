// Float64 finite-difference checking of the tape's backward passes. For a function
// f(inputs) -> y and a fixed random cotangent r, the scalar L = <r, f(inputs)> has
// analytic gradients from backward(y, seed = r); each is compared, entry by entry, with
// the central difference (L(x + h e) - L(x - h e)) / 2h.
#pragma once

#include <functional>
#include <vector>

#include "autograd/functions.h"
#include "test_util.h"

namespace vitune::testing {

using autograd::Variable;

// The seed of the random inputs and cotangents of the gradient checks.
constexpr uint64_t kGradcheckSeed = 20240611;

// Checks every input that requires a gradient; tolerance abs + rel * |fd|.
inline void expect_gradients_match(const std::function<Variable(const std::vector<Variable>&)>& f,
                                   const std::vector<Variable>& inputs, double h = 1e-6,
                                   double abs_tol = 1e-7, double rel_tol = 1e-6) {
  Variable y = f(inputs);
  Tensor r = random_normal(y.shape(), DType::F64, kGradcheckSeed, 999);
  for (const Variable& v : inputs) v.zero_grad();
  autograd::backward(y, r);
  for (size_t n = 0; n < inputs.size(); ++n) {
    const Variable& v = inputs[n];
    if (!v.requires_grad()) continue;
    ASSERT_TRUE(v.grad().defined()) << "input " << n << " got no gradient";
    Tensor& x = v.mutable_value();
    double* p = x.data<double>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      double saved = p[i];
      double up, down;
      {
        autograd::NoGradGuard no_grad;
        p[i] = saved + h;
        up = dot(r, f(inputs).value());
        p[i] = saved - h;
        down = dot(r, f(inputs).value());
      }
      p[i] = saved;
      double fd = (up - down) / (2 * h);
      double analytic = v.grad().item(i);
      EXPECT_NEAR(analytic, fd, abs_tol + rel_tol * std::fabs(fd)) << "input " << n << " entry " << i;
    }
  }
}

}  // namespace vitune::testing
