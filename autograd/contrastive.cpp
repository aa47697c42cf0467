// supervised_contrastive on the tape: the supervised contrastive loss (SupCon, Khosla et
// al. 2020, every row an anchor) with the L2 normalisation of the features fused in, as
// one host kernel for the forward and one for the closed-form backward.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "autograd/functions.h"
#include "engine/parallel.h"

namespace vitune::autograd {

namespace {

// Rows of features with a norm below this are divided by it instead (as
// torch.nn.functional.normalize does), so a zero row stays finite.
constexpr double kNormEpsilon = 1e-12;

// What the forward keeps for the backward: the normalised rows z [N, D], the norms
// ||x_i|| [N] and the anchor-wise softmax over the other rows p [N, N] (p_ii = 0).
struct ContrastiveSaved {
  Tensor z;
  Tensor norms;
  Tensor probs;
  std::vector<int64_t> positives;  // |P(i)| per anchor
};

void check_arguments(const Tensor& features, const Tensor& labels, double temperature, const char* op) {
  VITUNE_CHECK(features.dtype() == DType::F32 || features.dtype() == DType::F64, op,
               ": expected f32 or f64 features, got ", features.str());
  VITUNE_CHECK(features.ndim() == 2 && features.dim(0) >= 2 && features.dim(1) >= 1, op,
               ": features must be [rows, dim] with at least 2 rows (two views of each image "
               "stacked), got ",
               features.str());
  VITUNE_CHECK(labels.dtype() == DType::I64 && labels.ndim() == 1 && labels.dim(0) == features.dim(0),
               op, ": labels must be i64[", features.dim(0), "] to match features ", features.str(),
               ", got ", labels.str());
  VITUNE_CHECK(std::isfinite(temperature) && temperature > 0, op,
               ": temperature must be a positive number, got ", temperature);
}

// |P(i)| for every anchor: the other rows with the same label. An anchor without one has
// no defined loss (the reference code divides 0 by 0), so it is an error.
std::vector<int64_t> count_positives(const Tensor& labels, const char* op) {
  const int64_t rows = labels.numel();
  const int64_t* label = labels.data<int64_t>();
  std::vector<int64_t> count(size_t(rows), 0);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < rows; ++j) count[size_t(i)] += (j != i && label[j] == label[i]) ? 1 : 0;
    VITUNE_CHECK(count[size_t(i)] > 0, op, ": row ", i, " (label ", label[i],
                 ") has no positive: no other row carries its label (stack two views of every image)");
  }
  return count;
}

template <typename T>
double dot_row(const T* a, const T* b, int64_t dim) {
  double sum = 0;
  for (int64_t d = 0; d < dim; ++d) sum += double(a[d]) * double(b[d]);
  return sum;
}

// z_i = x_i / max(||x_i||, eps); norms_i = ||x_i||.
template <typename T>
void normalize_rows(const T* x, int64_t rows, int64_t dim, T* z, T* norms) {
  parallel_for(rows, 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const T* xi = x + i * dim;
      const double norm = std::sqrt(dot_row(xi, xi, dim));
      const double inv = 1.0 / std::max(norm, kNormEpsilon);
      for (int64_t d = 0; d < dim; ++d) z[i * dim + d] = T(double(xi[d]) * inv);
      norms[i] = T(norm);
    }
  });
}

// For anchor i, with s_ij = z_i . z_j / T and lse_i = log sum_{a != i} exp(s_ia) (taken
// about the row's largest s for stability):
//   p_ij = exp(s_ij - lse_i) (j != i),   L_i = lse_i - (1/|P(i)|) sum_{p in P(i)} s_ip.
template <typename T>
void forward_rows(const T* z, const int64_t* label, const std::vector<int64_t>& positives, int64_t rows,
                  int64_t dim, double temperature, T* probs, double* row_loss) {
  parallel_for(rows, 4, [&](int64_t begin, int64_t end) {
    std::vector<double> s(size_t(rows), 0.0);
    for (int64_t i = begin; i < end; ++i) {
      double max = -INFINITY;
      for (int64_t j = 0; j < rows; ++j) {
        s[size_t(j)] = dot_row(z + i * dim, z + j * dim, dim) / temperature;
        if (j != i) max = std::max(max, s[size_t(j)]);
      }
      double sum_exp = 0, positive_sum = 0;
      for (int64_t j = 0; j < rows; ++j) {
        if (j == i) continue;
        sum_exp += std::exp(s[size_t(j)] - max);
        if (label[j] == label[i]) positive_sum += s[size_t(j)];
      }
      const double lse = max + std::log(sum_exp);
      for (int64_t j = 0; j < rows; ++j) probs[i * rows + j] = j == i ? T(0) : T(std::exp(s[size_t(j)] - lse));
      row_loss[i] = lse - positive_sum / double(positives[size_t(i)]);
    }
  });
}

// See the derivation above supervised_contrastive. Row i of dx needs row i and column i
// of G, so each row is computed whole by one chunk, in a fixed order.
template <typename T>
void backward_rows(const ContrastiveSaved& saved, const int64_t* label, int64_t rows, int64_t dim,
                   double temperature, double grad_scale, T* dx) {
  const T* z = saved.z.data<T>();
  const T* norms = saved.norms.data<T>();
  const T* p = saved.probs.data<T>();
  const double g_scale = grad_scale / double(rows);
  parallel_for(rows, 4, [&](int64_t begin, int64_t end) {
    std::vector<double> dz(size_t(dim), 0.0);
    for (int64_t i = begin; i < end; ++i) {
      std::fill(dz.begin(), dz.end(), 0.0);
      const double inv_pi = 1.0 / double(saved.positives[size_t(i)]);
      for (int64_t j = 0; j < rows; ++j) {
        if (j == i) continue;
        const bool positive = label[j] == label[i];
        const double g_ij = double(p[i * rows + j]) - (positive ? inv_pi : 0.0);
        const double g_ji = double(p[j * rows + i]) - (positive ? 1.0 / double(saved.positives[size_t(j)]) : 0.0);
        const double c = (g_ij + g_ji) * g_scale / temperature;
        const T* zj = z + j * dim;
        for (int64_t d = 0; d < dim; ++d) dz[size_t(d)] += c * double(zj[d]);
      }
      const T* zi = z + i * dim;
      T* out = dx + i * dim;
      const double norm = double(norms[i]);
      if (norm > kNormEpsilon) {
        double radial = 0;
        for (int64_t d = 0; d < dim; ++d) radial += double(zi[d]) * dz[size_t(d)];
        for (int64_t d = 0; d < dim; ++d) out[d] = T((dz[size_t(d)] - double(zi[d]) * radial) / norm);
      } else {
        for (int64_t d = 0; d < dim; ++d) out[d] = T(dz[size_t(d)] / kNormEpsilon);
      }
    }
  });
}

}  // namespace

// Forward: z_i = x_i / ||x_i||, s_ij = z_i . z_j / T, and with P(i) the other rows
// labelled like row i,
//   L = (1/N) sum_i L_i,   L_i = lse_i - (1/|P(i)|) sum_{p in P(i)} s_ip,
//   lse_i = log sum_{a != i} exp(s_ia).
// (The reference scales L by T / base_temperature; here base_temperature = T.)
//
// Backward, for an incoming gradient g:
//   dL/ds_ij = (g/N) (p_ij - [j in P(i)] / |P(i)|) =: G_ij for j != i (G_ii = 0), with
//     p_ij = exp(s_ij - lse_i), since d lse_i / d s_ij = p_ij;
//   s_ij = z_i . z_j / T involves z_k as z_i (k = i) and as z_j (k = j), so
//     dL/dz_k = (1/T) sum_j (G_kj + G_jk) z_j;
//   z = x / ||x|| has Jacobian (I - z z^T) / ||x||, so
//     dL/dx_k = (dz_k - z_k (z_k . dz_k)) / ||x_k||,
//   and for a row whose norm is below eps (divided by eps instead), dL/dx_k = dz_k / eps.
Variable supervised_contrastive(const Variable& features, const Tensor& labels, double temperature) {
  const char* op = "supervised_contrastive";
  // A loss over one batch of features ([B, dim], small): computed on the host wherever
  // the features live, its value and gradient returned to their device.
  const Device device = features.value().device();
  const Tensor x = features.value().to(Device::cpu());
  const Tensor labels_host = labels.to(Device::cpu());
  check_arguments(x, labels_host, temperature, op);
  const int64_t rows = x.dim(0), dim = x.dim(1);
  auto saved = std::make_shared<ContrastiveSaved>();
  saved->positives = count_positives(labels_host, op);
  saved->z = Tensor::like(x, x.shape());
  saved->norms = Tensor::like(x, {rows});
  saved->probs = Tensor::like(x, {rows, rows});
  std::vector<double> row_loss(size_t(rows), 0.0);
  on_float_dtype(x, op, [&](auto zero) {
    using T = decltype(zero);
    normalize_rows<T>(x.data<T>(), rows, dim, saved->z.data<T>(), saved->norms.data<T>());
    forward_rows<T>(saved->z.data<T>(), labels_host.data<int64_t>(), saved->positives, rows, dim, temperature,
                    saved->probs.data<T>(), row_loss.data());
  });
  double total = 0;
  for (double loss : row_loss) total += loss;
  Tensor value = Tensor::full({1}, total / double(rows), x.dtype(), device);
  return make_result(value, {features}, op, [features, labels_host, temperature, saved, device](const Tensor& dl) {
    const Tensor& z = saved->z;  // the host copy, shaped like the features
    Tensor dx = Tensor::like(z, z.shape());
    on_float_dtype(z, "supervised_contrastive backward", [&](auto zero) {
      using T = decltype(zero);
      backward_rows<T>(*saved, labels_host.data<int64_t>(), z.dim(0), z.dim(1), temperature, dl.item(0),
                       dx.data<T>());
    });
    accumulate_grad(features, dx.to(device));
  });
}

}  // namespace vitune::autograd
