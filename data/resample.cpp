// Separable bilinear and bicubic resampling.
#include "data/resample.h"

#include <algorithm>
#include <cmath>

#include "engine/error.h"

namespace vitune::data {

namespace {

constexpr float kCubicA = -0.75f;

// For each output position, `count` source indices (relative to the region start) and
// their weights, stored at [position * count, position * count + count).
struct Taps {
  int count = 0;
  std::vector<int> index;
  std::vector<float> weight;
};

Taps linear_taps(int in_size, int out_size) {
  Taps taps;
  taps.count = 2;
  taps.index.resize(size_t(out_size) * 2);
  taps.weight.resize(size_t(out_size) * 2);
  const float scale = float(in_size) / float(out_size);
  for (int x = 0; x < out_size; ++x) {
    int first = x;
    float lambda = 0.0f;
    if (in_size != out_size) {
      const float source = std::max(scale * (float(x) + 0.5f) - 0.5f, 0.0f);
      first = std::min(int(std::floor(source)), in_size - 1);
      lambda = std::min(std::max(source - float(first), 0.0f), 1.0f);
    }
    taps.index[size_t(x) * 2] = first;
    taps.index[size_t(x) * 2 + 1] = first < in_size - 1 ? first + 1 : first;
    taps.weight[size_t(x) * 2] = 1.0f - lambda;
    taps.weight[size_t(x) * 2 + 1] = lambda;
  }
  return taps;
}

// Keys' kernel for |d| <= 1 and for 1 < |d| < 2.
float cubic_near(float d) { return ((kCubicA + 2.0f) * d - (kCubicA + 3.0f)) * d * d + 1.0f; }
float cubic_far(float d) {
  return ((kCubicA * d - 5.0f * kCubicA) * d + 8.0f * kCubicA) * d - 4.0f * kCubicA;
}

Taps cubic_taps(int in_size, int out_size) {
  Taps taps;
  taps.count = 4;
  taps.index.resize(size_t(out_size) * 4);
  taps.weight.resize(size_t(out_size) * 4);
  const float scale = float(in_size) / float(out_size);
  for (int x = 0; x < out_size; ++x) {
    const float source = scale * (float(x) + 0.5f) - 0.5f;
    const int floor_index = std::min(int(std::floor(source)), in_size - 1);
    const float t = std::min(std::max(source - float(floor_index), 0.0f), 1.0f);
    const float weights[4] = {cubic_far(t + 1.0f), cubic_near(t), cubic_near(1.0f - t),
                              cubic_far(2.0f - t)};
    for (int k = 0; k < 4; ++k) {
      taps.index[size_t(x) * 4 + size_t(k)] = std::clamp(floor_index - 1 + k, 0, in_size - 1);
      taps.weight[size_t(x) * 4 + size_t(k)] = weights[k];
    }
  }
  return taps;
}

Taps make_taps(int in_size, int out_size, Interpolation interpolation) {
  return interpolation == Interpolation::Bilinear ? linear_taps(in_size, out_size)
                                                  : cubic_taps(in_size, out_size);
}

}  // namespace

const char* interpolation_name(Interpolation interpolation) {
  return interpolation == Interpolation::Bilinear ? "bilinear" : "bicubic";
}

FloatImage resample(const FloatImage& source, const Region& region, int out_height, int out_width,
                    Interpolation interpolation) {
  VITUNE_CHECK(
      region.top >= 0 && region.left >= 0 && region.height > 0 && region.width > 0 &&
          region.top + region.height <= source.height && region.left + region.width <= source.width,
      "resize: region ", region.height, "x", region.width, " at (", region.top, ", ", region.left,
      ") does not lie inside the ", source.height, "x", source.width, " image");
  VITUNE_CHECK(out_height > 0 && out_width > 0, "resize: output size ", out_height, "x", out_width,
               " must be positive");
  const Taps across = make_taps(region.width, out_width, interpolation);
  const Taps down = make_taps(region.height, out_height, interpolation);

  FloatImage out(source.channels, out_height, out_width);
  FloatBuffer rows(size_t(region.height) * size_t(out_width));
  for (int c = 0; c < source.channels; ++c) {
    // Each row of the region resampled across: rows[r][x].
    for (int r = 0; r < region.height; ++r) {
      const float* in =
          source.plane(c) + size_t(region.top + r) * size_t(source.width) + size_t(region.left);
      float* row = rows.data() + size_t(r) * size_t(out_width);
      for (int x = 0; x < out_width; ++x) {
        const int* index = across.index.data() + size_t(x) * size_t(across.count);
        const float* weight = across.weight.data() + size_t(x) * size_t(across.count);
        float sum = 0.0f;
        for (int k = 0; k < across.count; ++k) sum += weight[k] * in[index[k]];
        row[x] = sum;
      }
    }
    // Then down the columns: out[y][x] = sum_k weight_k * rows[index_k][x].
    float* plane = out.plane(c);
    for (int y = 0; y < out_height; ++y) {
      float* row = plane + size_t(y) * size_t(out_width);
      const int* index = down.index.data() + size_t(y) * size_t(down.count);
      const float* weight = down.weight.data() + size_t(y) * size_t(down.count);
      std::fill(row, row + out_width, 0.0f);
      for (int k = 0; k < down.count; ++k) {
        const float* tap = rows.data() + size_t(index[k]) * size_t(out_width);
        const float w = weight[k];
        for (int x = 0; x < out_width; ++x) row[x] += w * tap[x];
      }
    }
  }
  return out;
}

}  // namespace vitune::data
