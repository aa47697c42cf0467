// Bicubic resampling of position embeddings, PyTorch's upsample_bicubic2d (plain or
// antialiased) on the host.
#include "nn/pos_embed_resample.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/error.h"

namespace vitune::nn {

namespace {

// Keys' cubic convolution kernel with coefficient a, for |x| < 2 (0 beyond).
double cubic(double x, double a) {
  x = std::abs(x);
  if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// For each output index, the source indices it reads and their weights.
struct Taps {
  std::vector<int64_t> index;
  std::vector<double> weight;
};

// upsample_bicubic2d: four taps around the source position, A = -0.75, indices clamped.
std::vector<Taps> plain_taps(int64_t in, int64_t out) {
  std::vector<Taps> result(static_cast<size_t>(out));
  const double scale = double(in) / double(out);
  for (int64_t o = 0; o < out; ++o) {
    const double source = (double(o) + 0.5) * scale - 0.5;  // align_corners false, not clamped for cubic
    const double base = std::floor(source);
    for (int k = 0; k < 4; ++k) {
      result[size_t(o)].index.push_back(std::clamp<int64_t>(int64_t(base) - 1 + k, 0, in - 1));
      result[size_t(o)].weight.push_back(cubic(source - (base - 1 + k), -0.75));
    }
  }
  return result;
}

// _upsample_bicubic2d_aa: A = -0.5, the kernel's support 2 stretched by the scale when
// shrinking, the taps cut to the grid and their weights normalised to sum 1.
std::vector<Taps> antialiased_taps(int64_t in, int64_t out) {
  std::vector<Taps> result(static_cast<size_t>(out));
  const double scale = double(in) / double(out);
  const double support = scale >= 1 ? 2 * scale : 2.0, stretch = scale >= 1 ? scale : 1.0;
  for (int64_t o = 0; o < out; ++o) {
    const double center = scale * (double(o) + 0.5);
    const int64_t first = std::max<int64_t>(int64_t(center - support + 0.5), 0);
    const int64_t end = std::min<int64_t>(int64_t(center + support + 0.5), in);
    Taps& taps = result[size_t(o)];
    double total = 0;
    for (int64_t i = first; i < end; ++i) {
      taps.index.push_back(i);
      taps.weight.push_back(cubic((double(i) - center + 0.5) / stretch, -0.5));
      total += taps.weight.back();
    }
    if (total != 0) {
      for (double& w : taps.weight) w /= total;
    }
  }
  return result;
}

}  // namespace

Tensor resample_pos_embed(const Tensor& pos_any, int prefix_tokens, int new_grid, bool antialias) {
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
  const std::vector<Taps> taps = antialias ? antialiased_taps(grid, new_grid) : plain_taps(grid, new_grid);
  const float* patch_in = in + prefix_tokens * dim;
  float* patch_out = o + prefix_tokens * dim;
  for (int64_t y = 0; y < new_grid; ++y) {
    for (int64_t x = 0; x < new_grid; ++x) {
      for (int64_t c = 0; c < dim; ++c) {
        double sum = 0;
        const Taps &rows = taps[size_t(y)], &cols = taps[size_t(x)];
        for (size_t i = 0; i < rows.index.size(); ++i) {
          double row = 0;
          for (size_t j = 0; j < cols.index.size(); ++j) {
            row += cols.weight[j] * patch_in[(rows.index[i] * grid + cols.index[j]) * dim + c];
          }
          sum += rows.weight[i] * row;
        }
        patch_out[(y * new_grid + x) * dim + c] = float(sum);
      }
    }
  }
  return out;
}

}  // namespace vitune::nn
