// The CUDA tests' common ground: the fixture that skips, saying why, where no CUDA
// device can be used; seeded inputs; and the harness that runs one op on the host and
// on the GPU from the same inputs and compares everything it produced (returned
// tensors, returned scalars, and every argument afterwards, so that written and
// accumulated outputs are compared too) with |gpu - cpu| <= abs + rel * |cpu|.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "engine/tensor.h"
#include "test_util.h"

namespace vitune::testing {

// Why the CUDA tests cannot run ("no CUDA device: ..."), or "" when they can.
std::string cuda_unavailable_reason();

// The base of every CUDA test: skips it, with the reason, where there is no device.
class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = cuda_unavailable_reason();
    if (!reason.empty()) GTEST_SKIP() << reason;
  }
};

// The device the tests run on.
inline Device gpu() { return Device::cuda(0); }

constexpr DType kFloatTypes[] = {DType::F32, DType::F64};

// A tolerance per float dtype, chosen per op.
struct OpTolerance {
  Tolerance f32;
  Tolerance f64;
  Tolerance of(DType dtype) const { return dtype == DType::F64 ? f64 : f32; }
};

constexpr Tolerance kExact{0, 0};
// Pure data movement (copies, permutations, selections): every bit must agree.
constexpr OpTolerance kMoved{kExact, kExact};
// One or two roundings per element (add, mul, axpy with or without a fused multiply-add).
constexpr OpTolerance kElementwise{{1e-7, 1e-6}, {1e-15, 1e-14}};
// Elementwise exp / erf / sqrt, whose library implementations differ by a few ulp.
constexpr OpTolerance kTranscendental{{1e-6, 1e-5}, {1e-13, 1e-12}};

// For outputs that sum `terms` terms of magnitude about one (inputs in [-1, 1]): the
// rounding of two different summation orders grows like sqrt(terms). f32 allows a few
// times the expected worst case; f64 stays near 1e-12, which any indexing slip exceeds.
OpTolerance summed(int64_t terms);

// Uniform values in [low, high) from vitune's counter-based generator (seed fixed,
// `stream` chosen per input), on the host.
Tensor uniform(const Shape& shape, DType dtype, uint64_t stream, double low = -1, double high = 1);
// An i64 vector on the host.
Tensor index_tensor(const std::vector<int64_t>& values);
// Sorted flat indices in [0, n), each kept with probability `fraction` (stream `stream`).
Tensor sorted_selection(int64_t n, double fraction, uint64_t stream);
// Writes `value` into element `index` of a float host tensor.
void set_element(Tensor& t, int64_t index, double value);

// What one run of an op produced besides its arguments.
struct OpOutputs {
  std::vector<std::pair<std::string, Tensor>> tensors;
  std::vector<std::pair<std::string, double>> scalars;

  OpOutputs& tensor(const std::string& name, const Tensor& value) {
    tensors.emplace_back(name, value);
    return *this;
  }
  OpOutputs& scalar(const std::string& name, double value) {
    scalars.emplace_back(name, value);
    return *this;
  }
};

// The arguments of one run: host inputs are copied to the device under test. An
// undefined tensor stays undefined (an output the op assigns, or an absent one).
using OpArgs = std::vector<Tensor>;
using OpBody = std::function<OpOutputs(OpArgs& args)>;

// Elementwise comparison of a result (any device) with the host reference: same shape
// and dtype; floats within `tol` (NaN only where the reference has NaN, infinities
// equal), other dtypes bit for bit. Names the worst element and counts the failures.
::testing::AssertionResult matches_reference(const Tensor& result, const Tensor& reference, Tolerance tol,
                                             const std::string& what);

// Runs `body` on host copies of `inputs` and on device copies of them and compares:
// each returned tensor (which must be on the device in the GPU run), each returned
// scalar, and each argument afterwards. A throw on either side is a failure.
::testing::AssertionResult gpu_matches_cpu(const std::string& what, const OpArgs& inputs, Tolerance tol,
                                           const OpBody& body);

// Runs `body` on host copies and on device copies of `inputs` and expects each run to
// throw vitune::Error -- on the GPU by the time the device has been waited for, as a bad
// index is reported then (engine/cuda/index_check.h) -- and to leave every argument as
// it was.
::testing::AssertionResult both_refuse(const std::string& what, const OpArgs& inputs, const OpBody& body);

}  // namespace vitune::testing
