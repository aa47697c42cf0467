// The CPU-against-GPU harness of op_harness.h: the skip reason, seeded inputs and the
// comparisons.
#include "op_harness.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <sstream>

#include "engine/devices.h"
#include "engine/error.h"
#include "engine/random.h"

namespace vitune::testing {

namespace {

constexpr uint64_t kSeed = 20240607;

bool is_float(DType dtype) { return dtype == DType::F32 || dtype == DType::F64; }

// |result - reference| within tol, NaN only against NaN, infinities only against themselves.
bool value_matches(double result, double reference, Tolerance tol) {
  if (std::isnan(reference)) return std::isnan(result);
  if (std::isinf(reference)) return result == reference;
  return std::fabs(result - reference) <= tol.abs + tol.rel * std::fabs(reference);
}

// How far outside the tolerance a failing value is (infinite for NaN/infinity mismatches).
double excess(double result, double reference, Tolerance tol) {
  const double d = std::fabs(result - reference) - (tol.abs + tol.rel * std::fabs(reference));
  return std::isnan(d) || std::isinf(reference) ? HUGE_VAL : d;
}

// Host copies of `inputs` (clones, so the op may write them) or device copies.
OpArgs copies(const OpArgs& inputs, Device device) {
  OpArgs out;
  for (const Tensor& t : inputs) {
    if (!t.defined()) {
      out.emplace_back();
    } else {
      out.push_back(device.is_cpu() ? t.clone() : t.to(device));
    }
  }
  return out;
}

// Runs body on args; returns "" or what it threw.
std::string run(const OpBody& body, OpArgs& args, OpOutputs& outputs) {
  try {
    outputs = body(args);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// Compares one tensor of the GPU run with its host counterpart into `report`.
void compare_tensor(const std::string& name, const Tensor& result, const Tensor& reference, Tolerance tol,
                    std::ostringstream& report, bool& ok) {
  if (result.defined() != reference.defined()) {
    report << "\n  " << name << ": defined " << (result.defined() ? "on the GPU only" : "on the host only");
    ok = false;
    return;
  }
  if (!result.defined()) return;
  if (result.device() != gpu()) {
    report << "\n  " << name << ": the GPU run left it on " << result.device().str();
    ok = false;
    return;
  }
  ::testing::AssertionResult same = matches_reference(result, reference, tol, name);
  if (!same) {
    report << "\n  " << same.message();
    ok = false;
  }
}

}  // namespace

std::string cuda_unavailable_reason() {
  static const std::string reason = [] {
    if (!cuda::built_with_cuda()) {
      return std::string("no CUDA device: this build has no CUDA backend (configure with -DVITUNE_CUDA=ON "
                         "where nvcc is installed)");
    }
    if (cuda::device_count() == 0) {
      return std::string("no CUDA device: the CUDA runtime finds none (no GPU, or no driver)");
    }
    return std::string();
  }();
  return reason;
}

OpTolerance summed(int64_t terms) {
  const double root = std::sqrt(double(std::max<int64_t>(terms, 1)));
  return {{5e-6 * root, 2e-5}, {1e-12 * std::max(1.0, root / 8), 1e-10}};
}

Tensor uniform(const Shape& shape, DType dtype, uint64_t stream, double low, double high) {
  Tensor t(shape, dtype, Device::cpu());
  fill_uniform(t, kSeed, stream, low, high);
  return t;
}

Tensor index_tensor(const std::vector<int64_t>& values) {
  return Tensor::from_vector<int64_t>({int64_t(values.size())}, values, Device::cpu());
}

Tensor sorted_selection(int64_t n, double fraction, uint64_t stream) {
  std::vector<int64_t> chosen;
  for (int64_t i = 0; i < n; ++i) {
    if (uniform01(kSeed, stream, uint64_t(i)) < fraction) chosen.push_back(i);
  }
  return index_tensor(chosen);
}

void set_element(Tensor& t, int64_t index, double value) {
  if (t.dtype() == DType::F64) {
    t.data<double>()[index] = value;
  } else {
    t.data<float>()[index] = float(value);
  }
}

::testing::AssertionResult matches_reference(const Tensor& result, const Tensor& reference, Tolerance tol,
                                             const std::string& what) {
  if (result.shape() != reference.shape() || result.dtype() != reference.dtype()) {
    return ::testing::AssertionFailure() << what << ": " << result.str() << ", expected " << reference.str();
  }
  const Tensor got = result.to(Device::cpu());
  const Tensor want = reference.to(Device::cpu());
  if (!is_float(want.dtype())) {
    const size_t width = dtype_size(want.dtype());
    for (int64_t i = 0; i < want.numel(); ++i) {
      if (std::memcmp(static_cast<const char*>(got.raw()) + i * width,
                      static_cast<const char*>(want.raw()) + i * width, width) != 0) {
        return ::testing::AssertionFailure() << what << ": element " << i << " differs (the first that does)";
      }
    }
    return ::testing::AssertionSuccess();
  }
  int64_t failures = 0, worst = -1;
  double worst_excess = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double a = got.item(i), e = want.item(i);
    if (value_matches(a, e, tol)) continue;
    ++failures;
    const double x = excess(a, e, tol);
    if (worst < 0 || x > worst_excess) {
      worst = i;
      worst_excess = x;
    }
  }
  if (failures == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << failures << " of " << want.numel()
                                       << " elements out of tolerance; worst: element " << worst << " is "
                                       << got.item(worst) << ", expected " << want.item(worst) << " (tolerance "
                                       << tol.abs << " + " << tol.rel << "*|expected|)";
}

::testing::AssertionResult gpu_matches_cpu(const std::string& what, const OpArgs& inputs, Tolerance tol,
                                           const OpBody& body) {
  for (const Tensor& t : inputs) {
    if (t.defined() && !t.device().is_cpu()) {
      return ::testing::AssertionFailure() << what << ": the harness takes host inputs, got one on "
                                           << t.device().str();
    }
  }
  OpArgs host_args = copies(inputs, Device::cpu());
  OpArgs device_args = copies(inputs, gpu());
  OpOutputs host_out, device_out;
  const std::string host_error = run(body, host_args, host_out);
  if (!host_error.empty()) return ::testing::AssertionFailure() << what << ": the host run threw: " << host_error;
  const std::string device_error = run(body, device_args, device_out);
  if (!device_error.empty()) return ::testing::AssertionFailure() << what << ": the GPU run threw: " << device_error;

  std::ostringstream report;
  bool ok = true;
  for (size_t i = 0; i < host_out.tensors.size(); ++i) {
    compare_tensor("output '" + host_out.tensors[i].first + "'", device_out.tensors[i].second,
                   host_out.tensors[i].second, tol, report, ok);
  }
  for (size_t i = 0; i < host_out.scalars.size(); ++i) {
    const double a = device_out.scalars[i].second, e = host_out.scalars[i].second;
    if (!value_matches(a, e, tol)) {
      report << "\n  scalar '" << host_out.scalars[i].first << "': " << a << " on the GPU, " << e
             << " on the host (tolerance " << tol.abs << " + " << tol.rel << "*|host|)";
      ok = false;
    }
  }
  for (size_t i = 0; i < host_args.size(); ++i) {
    compare_tensor("argument " + std::to_string(i) + " after the op", device_args[i], host_args[i], tol, report, ok);
  }
  if (ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ":" << report.str();
}

::testing::AssertionResult both_refuse(const std::string& what, const OpArgs& inputs, const OpBody& body) {
  for (Device device : {Device::cpu(), gpu()}) {
    OpArgs args = copies(inputs, device);
    try {
      body(args);
      // A bad index or label on the GPU is reported at the next wait for the device.
      synchronize(device);
      return ::testing::AssertionFailure() << what << ": the " << device.str() << " run did not throw";
    } catch (const Error&) {
    } catch (const std::exception& e) {
      return ::testing::AssertionFailure() << what << ": the " << device.str()
                                           << " run threw something other than vitune::Error: " << e.what();
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].defined()) continue;
      ::testing::AssertionResult same =
          matches_reference(args[i], inputs[i], kExact, "argument " + std::to_string(i) + " after the refusal");
      if (!same) return ::testing::AssertionFailure() << what << " on " << device.str() << ": " << same.message();
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace vitune::testing
