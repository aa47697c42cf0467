// The component bounds: LayerNorm from gamma and the smallest token deviation, linear
// maps from spectral norms, attention from per-head spectral norms (docs/plasticity.md).
#include "peft/bounds.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/error.h"
#include "engine/ops.h"
#include "peft/spectral_norm.h"

namespace vitune::peft {

namespace {

// Rows [row0, row0 + count) of a row-major [rows, cols] matrix, as doubles.
std::vector<double> row_block(const std::vector<double>& m, int64_t cols, int64_t row0, int64_t count) {
  return std::vector<double>(m.begin() + row0 * cols, m.begin() + (row0 + count) * cols);
}

// factor * a^T b for a [k, m] and b [k, n] row-major: an [m, n] tensor in f64 (f64 GEMM
// on the host, where the weights' copies are).
Tensor transpose_times(const std::vector<double>& a, const std::vector<double>& b, int64_t k, int64_t m, int64_t n,
                       double factor) {
  const Device host = Device::cpu();
  Tensor out = Tensor::zeros({m, n}, DType::F64, host);
  ops::gemm(true, false, factor, Tensor::from_vector({k, m}, a, host), Tensor::from_vector({k, n}, b, host), 0.0, out);
  return out;
}

}  // namespace

double gelu_lipschitz() {
  // GELU'(x) = Phi(x) + x phi(x); GELU''(x) = phi(x) (2 - x^2) vanishes at +-sqrt 2, and
  // GELU'(-sqrt 2) = 1 - GELU'(sqrt 2), so the largest |GELU'| is at sqrt 2.
  const double x = std::sqrt(2.0);
  const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
  const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
  return cdf + x * pdf;
}

double layer_norm_bound(const nn::LayerNorm& norm, double min_token_std) {
  VITUNE_CHECK(min_token_std > 0, "layer_norm_bound(", norm.weight.name(),
               "): the smallest token deviation must be positive, got ", min_token_std);
  const std::vector<double> gamma = norm.weight.value().to(Device::cpu()).to(DType::F64).to_vector<double>();
  double largest = 0;
  for (double g : gamma) largest = std::max(largest, std::fabs(g));
  return largest / min_token_std;
}

double linear_bound(const Tensor& weight) { return spectral_norm(weight); }

std::vector<AttentionHeadNorms> attention_head_norms(const nn::MultiHeadAttention& attention) {
  const Tensor& qkv_weight = attention.qkv.weight.value();
  const Tensor& proj_weight = attention.proj.weight.value();
  const int64_t dim = proj_weight.dim(0);
  const int heads = attention.heads;
  VITUNE_CHECK(heads > 0 && dim % heads == 0 && qkv_weight.ndim() == 2 && qkv_weight.dim(0) == 3 * dim &&
                   qkv_weight.dim(1) == dim && proj_weight.ndim() == 2 && proj_weight.dim(1) == dim,
               "attention_head_norms(", attention.qkv.weight.name(), "): expected qkv [3D, D] and proj [D, D] with D ",
               "divisible by ", heads, " heads, got ", qkv_weight.str(), " and ", proj_weight.str());
  const int64_t head_dim = dim / heads;
  // The weights are read on the host, wherever the model lives.
  const std::vector<double> wqkv = qkv_weight.to(Device::cpu()).to(DType::F64).to_vector<double>();
  const std::vector<double> wo = proj_weight.to(Device::cpu()).to(DType::F64).to_vector<double>();
  std::vector<double> bq(size_t(dim), 0.0);
  if (attention.qkv.bias.value().defined()) {
    std::vector<double> b = attention.qkv.bias.value().to(Device::cpu()).to(DType::F64).to_vector<double>();
    std::copy(b.begin(), b.begin() + dim, bq.begin());
  }
  const double inv_sqrt = 1.0 / std::sqrt(double(head_dim));
  std::vector<AttentionHeadNorms> out;
  for (int h = 0; h < heads; ++h) {
    const int64_t first = h * head_dim;
    const std::vector<double> wq = row_block(wqkv, dim, first, head_dim);            // [dh, D]
    const std::vector<double> wk = row_block(wqkv, dim, dim + first, head_dim);      // [dh, D]
    const std::vector<double> wv = row_block(wqkv, dim, 2 * dim + first, head_dim);  // [dh, D]
    // W_O^h = proj[:, first:first+dh] ([D, dh]); stored transposed ([dh, D]) for a^T b.
    std::vector<double> wo_t(size_t(head_dim * dim));
    for (int64_t i = 0; i < dim; ++i)
      for (int64_t j = 0; j < head_dim; ++j) wo_t[size_t(j * dim + i)] = wo[size_t(i * dim + first + j)];
    AttentionHeadNorms norms;
    norms.value_output = spectral_norm(transpose_times(wo_t, wv, head_dim, dim, dim, 1.0));
    norms.query_key = spectral_norm(transpose_times(wq, wk, head_dim, dim, dim, inv_sqrt));
    double c_squared = 0;
    for (int64_t i = 0; i < dim; ++i) {
      double c = 0;
      for (int64_t r = 0; r < head_dim; ++r) c += wk[size_t(r * dim + i)] * bq[size_t(first + r)];
      c *= inv_sqrt;
      c_squared += c * c;
    }
    norms.query_bias = std::sqrt(c_squared);
    out.push_back(norms);
  }
  return out;
}

double attention_bound(const nn::MultiHeadAttention& attention, int64_t tokens, double max_token_norm) {
  VITUNE_CHECK(tokens >= 1 && max_token_norm >= 0 && std::isfinite(max_token_norm), "attention_bound(",
               attention.qkv.weight.name(), "): expected tokens >= 1 and a finite token norm >= 0, got ", tokens,
               " and ", max_token_norm);
  if (attention.q_norm) return std::numeric_limits<double>::quiet_NaN();
  const double root_n = std::sqrt(double(tokens));
  const double r = max_token_norm;
  double bound = 0;
  for (const AttentionHeadNorms& head : attention_head_norms(attention))
    bound += head.value_output * (root_n + r * r * head.query_key * (1.0 + root_n) + r * root_n * head.query_bias);
  return bound;
}

}  // namespace vitune::peft
