// Helpers shared by the test suites: paths of the committed golden data, tensor
// comparison with a stated tolerance |actual - expected| <= abs + rel * |expected|,
// seeded random tensors, a scoped thread count, and temporary files.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "engine/parallel.h"
#include "engine/random.h"
#include "engine/tensor.h"

namespace vitune::testing {

// The golden-data folder: VITUNE_TEST_DATA when set (test programs run from a copied or
// moved tree), else this source tree's tests/golden as compiled in.
inline std::string test_data_dir() {
  const char* moved = std::getenv("VITUNE_TEST_DATA");
  return moved != nullptr && *moved != '\0' ? std::string(moved) : std::string(VITUNE_TEST_DATA_DIR);
}

inline std::string data_path(const std::string& name) { return test_data_dir() + "/" + name; }

struct Tolerance {
  double abs;
  double rel;
};

// Stated tolerances per dtype for comparisons against PyTorch golden values.
constexpr Tolerance kF32Forward{1e-5, 1e-4};
constexpr Tolerance kF32Gradient{1e-5, 1e-3};
constexpr Tolerance kF64Exact{1e-12, 1e-10};

// Checks every element; reports the worst one, naming `what`. Either tensor may be on
// any device: both are read through one copy to the host.
inline ::testing::AssertionResult tensors_close(const Tensor& actual_on_any, const Tensor& expected_on_any,
                                                Tolerance tol, const std::string& what = "") {
  const Tensor actual = actual_on_any.to(Device::cpu()), expected = expected_on_any.to(Device::cpu());
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

// Bitwise equality of two tensors' bytes (on any devices, compared on the host).
inline bool bitwise_equal(const Tensor& a_on_any, const Tensor& b_on_any) {
  const Tensor a = a_on_any.to(Device::cpu()), b = b_on_any.to(Device::cpu());
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// The elements of `t` as doubles, in index order.
inline std::vector<double> values(const Tensor& t) { return t.to(DType::F64).to_vector<double>(); }

// The largest |x - y| over the elements of two tensors of one element count (any devices).
inline double max_difference(const Tensor& x_on_any, const Tensor& y_on_any) {
  const Tensor x = x_on_any.to(Device::cpu()), y = y_on_any.to(Device::cpu());
  double worst = 0;
  for (int64_t i = 0; i < x.numel(); ++i) worst = std::max(worst, std::fabs(x.item(i) - y.item(i)));
  return worst;
}

// Sum of a * b over all elements, in double, in index order (any devices).
inline double dot(const Tensor& a_on_any, const Tensor& b_on_any) {
  const Tensor a = a_on_any.to(Device::cpu()), b = b_on_any.to(Device::cpu());
  double sum = 0;
  for (int64_t i = 0; i < a.numel(); ++i) sum += a.item(i) * b.item(i);
  return sum;
}

// Normal samples N(mean, stddev^2) on the host from vitune::fill_normal(seed, stream).
inline Tensor random_normal(Shape shape, DType dtype, uint64_t seed, uint64_t stream, double mean = 0,
                            double stddev = 1) {
  Tensor t(std::move(shape), dtype, Device::cpu());
  fill_normal(t, seed, stream, mean, stddev);
  return t;
}

// Uniform samples in [low, high) from std::mt19937(seed), drawn as Sample and stored as T.
template <typename T, typename Sample = T>
Tensor uniform_tensor(const Shape& shape, unsigned seed, double low, double high) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<Sample> dist(static_cast<Sample>(low), static_cast<Sample>(high));
  std::vector<T> v(size_t(shape_numel(shape)));
  for (T& x : v) x = T(dist(gen));
  return Tensor::from_vector(shape, v, Device::cpu());
}

// Sets the thread pool size for one scope and restores it after.
class ThreadCount {
 public:
  explicit ThreadCount(int n) : saved_(num_threads()) { set_num_threads(n); }
  ~ThreadCount() { set_num_threads(saved_); }
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;

 private:
  int saved_;
};

// A temporary file path, TempDir() + stem + "_<pid>" + extension, removed when this goes away.
class TempPath {
 public:
  TempPath(const std::string& stem, const std::string& extension)
      : path_(::testing::TempDir() + stem + "_" + std::to_string(::getpid()) + extension) {}
  ~TempPath() { std::remove(path_.c_str()); }
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;
  const std::string& str() const { return path_; }

 private:
  std::string path_;
};

// Writes `bytes` as the whole content of the file at `path`.
inline void write_raw(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

// The whole content of the file at `path` ("" when it cannot be read).
inline std::string read_raw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

}  // namespace vitune::testing
