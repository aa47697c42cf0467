// Gram matrices, pairwise and matched distances, and the plasticity ratios from them.
#include "peft/plasticity_pairs.h"

#include <algorithm>
#include <cmath>

#include "engine/error.h"
#include "engine/ops.h"

namespace vitune::peft {

namespace {

constexpr double kSameInputSquared = 1e-12;  // squared relative distance of "identical" inputs
constexpr double kSameInput = 1e-6;
constexpr int64_t kGramSlice = 8192;  // columns converted to double at a time

void check_batch(const Tensor& x, const char* what) {
  VITUNE_CHECK(x.defined() && x.ndim() >= 1 && (x.dtype() == DType::F32 || x.dtype() == DType::F64), what,
               ": expected a float batch [B, ...], got ", x.defined() ? x.str() : "an undefined tensor");
}

void check_gram(const Tensor& g, const char* what) {
  VITUNE_CHECK(g.ndim() == 2 && g.dim(0) == g.dim(1) && g.dtype() == DType::F64, what,
               ": expected an f64 Gram matrix [B, B], got ", g.str());
}

double squared_distance(const double* g, int64_t n, int64_t a, int64_t b) {
  return std::max(0.0, g[a * n + a] + g[b * n + b] - 2.0 * g[a * n + b]);
}

// Per row k of the flattened batches, the sum over its elements of f(a, b) in double.
template <typename T, typename F>
std::vector<double> row_sums(const Tensor& a, const Tensor& b, F f) {
  const int64_t rows = a.dim(0), width = rows > 0 ? a.numel() / rows : 0;
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  std::vector<double> out(static_cast<size_t>(rows));
  for (int64_t k = 0; k < rows; ++k) {
    double sum = 0;
    for (int64_t i = k * width; i < (k + 1) * width; ++i) sum += f(double(pa[i]), double(pb[i]));
    out[size_t(k)] = sum;
  }
  return out;
}

void check_matched(const Tensor& a, const Tensor& b, const char* what) {
  check_batch(a, what);
  check_batch(b, what);
  VITUNE_CHECK(a.shape() == b.shape() && a.dtype() == b.dtype(), what, ": batches ", a.str(), " and ", b.str(),
               " differ in shape or dtype");
}

}  // namespace

Tensor gram_matrix(const Tensor& x) {
  check_batch(x, "gram_matrix");
  const int64_t batch = x.dim(0), width = batch > 0 ? x.numel() / batch : 0;
  Tensor gram = Tensor::zeros({batch, batch}, DType::F64, x.device());
  // Column slices of the flattened batch, converted to double one at a time and
  // accumulated in a fixed order, all on x's device: G = sum over slices of X_s X_s^T.
  const Tensor flat = x.reshape({batch, width});
  for (int64_t first = 0; first < width; first += kGramSlice) {
    const int64_t count = std::min(kGramSlice, width - first);
    const Tensor slice = ops::column_slice(flat, first, count).to(DType::F64);
    ops::gemm(false, true, 1.0, slice, slice, 1.0, gram);
  }
  return gram.to(Device::cpu());
}

std::vector<double> pair_distances(const Tensor& gram_on_any) {
  check_gram(gram_on_any, "pair_distances");
  const Tensor gram = gram_on_any.to(Device::cpu());
  const int64_t n = gram.dim(0);
  const double* g = gram.data<double>();
  std::vector<double> out;
  out.reserve(size_t(n * (n - 1) / 2));
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = a + 1; b < n; ++b) out.push_back(std::sqrt(squared_distance(g, n, a, b)));
  return out;
}

std::vector<double> matched_distances(const Tensor& a_on_any, const Tensor& b_on_any) {
  check_matched(a_on_any, b_on_any, "matched_distances");
  const Tensor a = a_on_any.to(Device::cpu()), b = b_on_any.to(Device::cpu());
  auto square_difference = [](double x, double y) { return (x - y) * (x - y); };
  std::vector<double> out =
      a.dtype() == DType::F32 ? row_sums<float>(a, b, square_difference) : row_sums<double>(a, b, square_difference);
  for (double& d : out) d = std::sqrt(d);
  return out;
}

std::vector<double> matched_scales(const Tensor& a_on_any, const Tensor& b_on_any) {
  check_matched(a_on_any, b_on_any, "matched_scales");
  const Tensor a = a_on_any.to(Device::cpu()), b = b_on_any.to(Device::cpu());
  auto square_a = [](double x, double) { return x * x; };
  auto square_b = [](double, double y) { return y * y; };
  const bool f32 = a.dtype() == DType::F32;
  std::vector<double> na = f32 ? row_sums<float>(a, b, square_a) : row_sums<double>(a, b, square_a);
  std::vector<double> nb = f32 ? row_sums<float>(a, b, square_b) : row_sums<double>(a, b, square_b);
  for (size_t k = 0; k < na.size(); ++k) na[k] = std::sqrt(std::max(na[k], nb[k]));
  return na;
}

void add_pair_ratios(const Tensor& input_gram, const Tensor& output_gram, RunningStats& stats, PairCounts& counts) {
  check_gram(input_gram, "add_pair_ratios (inputs)");
  check_gram(output_gram, "add_pair_ratios (outputs)");
  VITUNE_CHECK(input_gram.dim(0) == output_gram.dim(0), "add_pair_ratios: ", input_gram.dim(0), " inputs but ",
               output_gram.dim(0), " outputs");
  const int64_t n = input_gram.dim(0);
  const Tensor input_host = input_gram.to(Device::cpu()), output_host = output_gram.to(Device::cpu());
  const double* gi = input_host.data<double>();
  const double* go = output_host.data<double>();
  for (int64_t a = 0; a < n; ++a) {
    for (int64_t b = a + 1; b < n; ++b) {
      const double in = squared_distance(gi, n, a, b);
      if (in <= kSameInputSquared * std::max(gi[a * n + a], gi[b * n + b])) {
        ++counts.skipped;
        continue;
      }
      stats.add(std::sqrt(squared_distance(go, n, a, b) / in));
      ++counts.used;
    }
  }
}

void add_matched_ratios(const std::vector<double>& input, const std::vector<double>& input_scale,
                        const std::vector<double>& output, RunningStats& stats, PairCounts& counts) {
  VITUNE_CHECK(input.size() == output.size() && input.size() == input_scale.size(),
               "add_matched_ratios: ", input.size(), " input distances, ", input_scale.size(), " scales and ",
               output.size(), " output distances");
  for (size_t k = 0; k < input.size(); ++k) {
    if (input[k] <= kSameInput * input_scale[k]) {
      ++counts.skipped;
      continue;
    }
    stats.add(output[k] / input[k]);
    ++counts.used;
  }
}

}  // namespace vitune::peft
