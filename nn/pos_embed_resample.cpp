// Bicubic resampling of position embeddings, PyTorch's upsample_bicubic2d on the host.
#include "nn/pos_embed_resample.h"

#include <algorithm>
#include <cmath>

#include "engine/error.h"

namespace vitune::nn {

namespace {

constexpr double kA = -0.75;  // PyTorch's cubic convolution coefficient

double near_weight(double x) { return ((kA + 2) * x - (kA + 3)) * x * x + 1; }        // |x| <= 1
double far_weight(double x) { return ((kA * x - 5 * kA) * x + 8 * kA) * x - 4 * kA; }  // 1 < |x| < 2

// For each output index, the four source indices (clamped) and their weights.
struct Taps {
  int64_t index[4];
  double weight[4];
};

std::vector<Taps> taps(int64_t in, int64_t out) {
  std::vector<Taps> result(static_cast<size_t>(out));
  const double scale = double(in) / double(out);
  for (int64_t o = 0; o < out; ++o) {
    const double source = (double(o) + 0.5) * scale - 0.5;  // align_corners false, not clamped for cubic
    const double base = std::floor(source);
    const double t = source - base;
    const double weights[4] = {far_weight(t + 1), near_weight(t), near_weight(1 - t), far_weight(2 - t)};
    for (int k = 0; k < 4; ++k) {
      result[size_t(o)].index[k] = std::clamp<int64_t>(int64_t(base) - 1 + k, 0, in - 1);
      result[size_t(o)].weight[k] = weights[k];
    }
  }
  return result;
}

}  // namespace

Tensor resample_pos_embed(const Tensor& pos_any, int prefix_tokens, int new_grid) {
  VITUNE_CHECK(pos_any.ndim() == 3 && pos_any.dim(0) == 1, "resample_pos_embed: pos_embed is ", pos_any.str(),
               ", expected [1, tokens, dim]");
  const Tensor pos = pos_any.to(DType::F32);
  const int64_t dim = pos.dim(2), patches = pos.dim(1) - prefix_tokens;
  const int64_t grid = std::llround(std::sqrt(double(std::max<int64_t>(patches, 0))));
  VITUNE_CHECK(patches > 0 && grid * grid == patches && new_grid >= 1, "resample_pos_embed: ", pos.dim(1),
               " tokens are not ", prefix_tokens, " prefix tokens and a square grid, or the new grid ", new_grid,
               " is empty");
  Tensor out = Tensor::zeros({1, prefix_tokens + int64_t(new_grid) * new_grid, dim}, DType::F32, Device::cpu());
  const float* in = pos.data<float>();
  float* o = out.data<float>();
  std::copy(in, in + prefix_tokens * dim, o);
  const std::vector<Taps> rows = taps(grid, new_grid), cols = taps(grid, new_grid);
  const float* patch_in = in + prefix_tokens * dim;
  float* patch_out = o + prefix_tokens * dim;
  for (int64_t y = 0; y < new_grid; ++y) {
    for (int64_t x = 0; x < new_grid; ++x) {
      for (int64_t c = 0; c < dim; ++c) {
        double sum = 0;
        for (int i = 0; i < 4; ++i) {
          double row = 0;
          for (int j = 0; j < 4; ++j) {
            row += cols[size_t(x)].weight[j] * patch_in[(rows[size_t(y)].index[i] * grid + cols[size_t(x)].index[j]) * dim + c];
          }
          sum += rows[size_t(y)].weight[i] * row;
        }
        patch_out[(y * new_grid + x) * dim + c] = float(sum);
      }
    }
  }
  return out;
}

}  // namespace vitune::nn
