// Helpers shared by the test suites: paths of the committed golden data and tensor
// comparison with a stated tolerance |actual - expected| <= abs + rel * |expected|.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "engine/tensor.h"

namespace vitune::testing {

inline std::string data_path(const std::string& name) {
  return std::string(VITUNE_TEST_DATA_DIR) + "/" + name;
}

struct Tolerance {
  double abs;
  double rel;
};

// Stated tolerances per dtype for comparisons against PyTorch golden values.
constexpr Tolerance kF32Forward{1e-5, 1e-4};
constexpr Tolerance kF32Gradient{1e-5, 1e-3};
constexpr Tolerance kF64Exact{1e-12, 1e-10};

// Checks every element; reports the worst one, naming `what`.
inline ::testing::AssertionResult tensors_close(const Tensor& actual, const Tensor& expected,
                                                Tolerance tol, const std::string& what = "") {
  if (actual.shape() != expected.shape()) {
    return ::testing::AssertionFailure()
           << what << ": shape " << shape_str(actual.shape()) << " vs expected "
           << shape_str(expected.shape());
  }
  int64_t worst = -1;
  double worst_excess = 0;
  for (int64_t i = 0; i < actual.numel(); ++i) {
    double a = actual.item(i), e = expected.item(i);
    double allowed = tol.abs + tol.rel * std::fabs(e);
    double excess = std::fabs(a - e) - allowed;
    if (!(excess <= 0) && (worst < 0 || !(excess <= worst_excess))) {
      worst = i;
      worst_excess = excess;
      if (std::isnan(excess)) break;
    }
  }
  if (worst < 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << ": element " << worst << " is " << actual.item(worst) << ", expected "
         << expected.item(worst) << " (tolerance " << tol.abs << " + " << tol.rel << "*|ref|)";
}

// Bitwise equality of two tensors' bytes.
inline bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

}  // namespace vitune::testing
