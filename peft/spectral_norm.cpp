// Power iteration for the spectral norm: v <- M^T M v / |M^T M v|, sigma = |M v|.
#include "peft/spectral_norm.h"

#include <cmath>
#include <vector>

#include "engine/error.h"
#include "engine/parallel.h"
#include "engine/random.h"

namespace vitune::peft {

namespace {

constexpr int kMaxIterations = 100000;
constexpr uint64_t kStartSeed = 0x5eed5eedULL;

// out = a v for a row-major [rows, cols] matrix a; each output row in one chunk.
void multiply(const std::vector<double>& a, int64_t rows, int64_t cols, const std::vector<double>& v,
              std::vector<double>& out) {
  parallel_for(rows, 64, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const double* row = a.data() + r * cols;
      double sum = 0;
      for (int64_t c = 0; c < cols; ++c) sum += row[c] * v[size_t(c)];
      out[size_t(r)] = sum;
    }
  });
}

double norm(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x * x;
  return std::sqrt(sum);
}

void scale(std::vector<double>& v, double factor) {
  for (double& x : v) x *= factor;
}

}  // namespace

double spectral_norm(const Tensor& matrix, double relative_tolerance) {
  VITUNE_CHECK(matrix.ndim() == 2 && (matrix.dtype() == DType::F32 || matrix.dtype() == DType::F64),
               "spectral_norm: expected a 2-D f32 or f64 matrix, got ", matrix.str());
  VITUNE_CHECK(relative_tolerance > 0, "spectral_norm: relative_tolerance must be positive, got ", relative_tolerance);
  const int64_t rows = matrix.dim(0), cols = matrix.dim(1);
  if (rows == 0 || cols == 0) return 0.0;
  const std::vector<double> m = matrix.to(Device::cpu()).to(DType::F64).to_vector<double>();
  bool all_zero = true;
  for (double x : m) {
    VITUNE_CHECK(std::isfinite(x), "spectral_norm: the matrix ", matrix.str(), " holds ", x);
    all_zero = all_zero && x == 0;
  }
  if (all_zero) return 0.0;
  // The transpose, stored row-major too, so both products are row dot products.
  std::vector<double> mt(m.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) mt[size_t(c * rows + r)] = m[size_t(r * cols + c)];

  std::vector<double> v(static_cast<size_t>(cols)), mv(static_cast<size_t>(rows));
  for (int64_t c = 0; c < cols; ++c) v[size_t(c)] = 1.0 + 0.5 * double(standard_normal(kStartSeed, 0, uint64_t(c)));
  scale(v, 1.0 / norm(v));
  double sigma = 0;
  for (int iteration = 0; iteration < kMaxIterations; ++iteration) {
    multiply(m, rows, cols, v, mv);
    const double next = norm(mv);
    // After the first step v lies in the row space of M, where M v = 0 only for v = 0.
    VITUNE_CHECK(next > 0, "spectral_norm: the start vector lies in the null space of ", matrix.str());
    if (iteration > 0 && std::fabs(next - sigma) <= relative_tolerance * next) return next;
    sigma = next;
    multiply(mt, cols, rows, mv, v);
    scale(v, 1.0 / norm(v));
  }
  throw Error(cat("spectral_norm: power iteration on ", matrix.str(), " did not settle to a relative change of ",
                  relative_tolerance, " in ", kMaxIterations, " iterations (last estimate ", sigma, ")"));
}

}  // namespace vitune::peft
