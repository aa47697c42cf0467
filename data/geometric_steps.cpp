// Resize, centre crop, random resized crop and horizontal flip.
#include <algorithm>
#include <cmath>

#include "data/transform_steps.h"
#include "engine/error.h"

namespace vitune::data {

namespace {

constexpr int kCropAttempts = 10;

Region whole(const FloatImage& image) { return {0, 0, image.height, image.width}; }

// Python's round(): to nearest, ties to even (the default floating-point rounding mode).
int64_t round_half_even(double value) { return int64_t(std::nearbyint(value)); }

}  // namespace

Resize::Resize(int height, int width, Interpolation interpolation)
    : height_(height), width_(width), interpolation_(interpolation) {
  VITUNE_CHECK(height > 0 && width > 0, "resize: size ", height, "x", width, " must be positive");
}

void Resize::apply(FloatImage& image, const StepRandom&) const {
  if (image.height == height_ && image.width == width_) return;
  image = resample(image, whole(image), height_, width_, interpolation_);
}

std::string Resize::describe() const {
  return cat("resize(", height_, "x", width_, ", ", interpolation_name(interpolation_), ")");
}

std::pair<int, int> shorter_side_size(int height, int width, int size) {
  VITUNE_CHECK(size > 0, "resize: shorter side ", size, " must be positive");
  const bool tall = width <= height;
  const int shorter = tall ? width : height;
  const int longer = tall ? height : width;
  const int new_longer = int(double(size) * double(longer) / double(shorter));
  return tall ? std::pair<int, int>{new_longer, size} : std::pair<int, int>{size, new_longer};
}

ResizeShorterSide::ResizeShorterSide(int size, Interpolation interpolation)
    : size_(size), interpolation_(interpolation) {
  VITUNE_CHECK(size > 0, "resize: shorter side ", size, " must be positive");
}

void ResizeShorterSide::apply(FloatImage& image, const StepRandom&) const {
  const auto [height, width] = shorter_side_size(image.height, image.width, size_);
  if (image.height == height && image.width == width) return;
  image = resample(image, whole(image), height, width, interpolation_);
}

std::string ResizeShorterSide::describe() const {
  return cat("resize_shorter(", size_, ", ", interpolation_name(interpolation_), ")");
}

Region centre_crop_region(int image_height, int image_width, int crop_height, int crop_width) {
  VITUNE_CHECK(crop_height <= image_height && crop_width <= image_width,
               "centre crop: ", crop_height, "x", crop_width, " is larger than the ", image_height,
               "x", image_width, " image");
  return {int(round_half_even((image_height - crop_height) / 2.0)),
          int(round_half_even((image_width - crop_width) / 2.0)), crop_height, crop_width};
}

CentreCrop::CentreCrop(int height, int width) : height_(height), width_(width) {
  VITUNE_CHECK(height > 0 && width > 0, "centre crop: size ", height, "x", width,
               " must be positive");
}

void CentreCrop::apply(FloatImage& image, const StepRandom&) const {
  if (image.height == height_ && image.width == width_) return;
  const Region region = centre_crop_region(image.height, image.width, height_, width_);
  FloatImage out(image.channels, height_, width_);
  for (int c = 0; c < image.channels; ++c) {
    for (int y = 0; y < height_; ++y) {
      const float* in =
          image.plane(c) + size_t(region.top + y) * size_t(image.width) + size_t(region.left);
      std::copy(in, in + width_, out.plane(c) + size_t(y) * size_t(width_));
    }
  }
  image = std::move(out);
}

std::string CentreCrop::describe() const { return cat("centre_crop(", height_, "x", width_, ")"); }

Region random_resized_crop_region(int height, int width, const StepRandom& random,
                                  std::pair<double, double> scale,
                                  std::pair<double, double> ratio) {
  const double area = double(height) * double(width);
  const double log_low = std::log(ratio.first), log_high = std::log(ratio.second);
  for (int attempt = 0; attempt < kCropAttempts; ++attempt) {
    const int draw = 4 * attempt;
    const double target_area =
        area * (scale.first + (scale.second - scale.first) * double(random.uniform(draw)));
    const double aspect =
        std::exp(log_low + (log_high - log_low) * double(random.uniform(draw + 1)));
    const int64_t w = round_half_even(std::sqrt(target_area * aspect));
    const int64_t h = round_half_even(std::sqrt(target_area / aspect));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      const int64_t top = random.below(height - h + 1, draw + 2);
      const int64_t left = random.below(width - w + 1, draw + 3);
      return {int(top), int(left), int(h), int(w)};
    }
  }
  // Fallback: the whole image, narrowed to the nearest allowed aspect ratio, centred.
  const double in_ratio = double(width) / double(height);
  int64_t w = width, h = height;
  if (in_ratio < ratio.first) {
    h = round_half_even(double(w) / ratio.first);
  } else if (in_ratio > ratio.second) {
    w = round_half_even(double(h) * ratio.second);
  }
  return {int((height - h) / 2), int((width - w) / 2), int(h), int(w)};
}

RandomResizedCrop::RandomResizedCrop(int size, Interpolation interpolation,
                                     std::pair<double, double> scale,
                                     std::pair<double, double> ratio)
    : size_(size), interpolation_(interpolation), scale_(scale), ratio_(ratio) {
  VITUNE_CHECK(size > 0, "random resized crop: size ", size, " must be positive");
  VITUNE_CHECK(scale.first > 0 && scale.first <= scale.second, "random resized crop: scale (",
               scale.first, ", ", scale.second, ") is not an interval of positive values");
  VITUNE_CHECK(ratio.first > 0 && ratio.first <= ratio.second, "random resized crop: ratio (",
               ratio.first, ", ", ratio.second, ") is not an interval of positive values");
}

void RandomResizedCrop::apply(FloatImage& image, const StepRandom& random) const {
  const Region region =
      random_resized_crop_region(image.height, image.width, random, scale_, ratio_);
  image = resample(image, region, size_, size_, interpolation_);
}

std::string RandomResizedCrop::describe() const {
  return cat("random_resized_crop(", size_, ", ", interpolation_name(interpolation_), ", scale ",
             scale_.first, "-", scale_.second, ", ratio ", ratio_.first, "-", ratio_.second, ")");
}

RandomHorizontalFlip::RandomHorizontalFlip(double p) : p_(p) {
  VITUNE_CHECK(p >= 0 && p <= 1, "horizontal flip: probability ", p, " is not in [0, 1]");
}

void RandomHorizontalFlip::apply(FloatImage& image, const StepRandom& random) const {
  if (!(double(random.uniform(0)) < p_)) return;
  for (int c = 0; c < image.channels; ++c) {
    for (int y = 0; y < image.height; ++y) {
      float* row = image.plane(c) + size_t(y) * size_t(image.width);
      std::reverse(row, row + image.width);
    }
  }
}

std::string RandomHorizontalFlip::describe() const { return cat("horizontal_flip(p=", p_, ")"); }

}  // namespace vitune::data
