// Channel conversion and normalisation.
#include <numeric>

#include "data/transform_steps.h"
#include "engine/error.h"

namespace vitune::data {

namespace {

constexpr float kRedWeight = 0.299f;
constexpr float kGreenWeight = 0.587f;
constexpr float kBlueWeight = 0.114f;

std::string join(const std::vector<float>& values) {
  std::string text;
  for (size_t i = 0; i < values.size(); ++i) text += cat(i ? "," : "", values[i]);
  return text;
}

float average(const std::vector<float>& values) {
  return std::accumulate(values.begin(), values.end(), 0.0f) / float(values.size());
}

}  // namespace

ToChannels::ToChannels(int channels) : channels_(channels) {
  VITUNE_CHECK(channels == 1 || channels == 3, "channel conversion: ", channels,
               " channels, expected 1 or 3");
}

void ToChannels::apply(FloatImage& image, const StepRandom&) const {
  if (image.channels == channels_) return;
  const size_t count = size_t(image.height) * size_t(image.width);
  FloatImage out(channels_, image.height, image.width);
  if (channels_ == 3) {
    for (int c = 0; c < 3; ++c) std::copy(image.plane(0), image.plane(0) + count, out.plane(c));
  } else {
    const float* red = image.plane(0);
    const float* green = image.plane(1);
    const float* blue = image.plane(2);
    float* grey = out.plane(0);
    for (size_t p = 0; p < count; ++p) {
      grey[p] = kRedWeight * red[p] + kGreenWeight * green[p] + kBlueWeight * blue[p];
    }
  }
  image = std::move(out);
}

std::string ToChannels::describe() const { return cat("to_channels(", channels_, ")"); }

Normalize::Normalize(std::vector<float> mean, std::vector<float> std)
    : mean_(std::move(mean)), std_(std::move(std)) {
  VITUNE_CHECK(!mean_.empty() && mean_.size() == std_.size(), "normalise: ", mean_.size(),
               " means and ", std_.size(), " deviations, expected the same positive count");
  for (float s : std_) VITUNE_CHECK(s > 0, "normalise: deviation ", s, " is not positive");
}

void Normalize::apply(FloatImage& image, const StepRandom&) const {
  const size_t channels = size_t(image.channels);
  VITUNE_CHECK(
      mean_.size() == 1 || mean_.size() == channels || (channels == 1 && mean_.size() == 3),
      "normalise: ", mean_.size(), " means for an image of ", channels, " channels");
  const size_t count = size_t(image.height) * size_t(image.width);
  for (size_t c = 0; c < channels; ++c) {
    float mean = mean_.size() == channels ? mean_[c] : mean_[0];
    float deviation = std_.size() == channels ? std_[c] : std_[0];
    if (channels == 1 && mean_.size() == 3) {
      mean = average(mean_);
      deviation = average(std_);
    }
    float* plane = image.plane(int(c));
    for (size_t p = 0; p < count; ++p) plane[p] = (plane[p] - mean) / deviation;
  }
}

std::string Normalize::describe() const {
  return cat("normalise(mean ", join(mean_), ", std ", join(std_), ")");
}

}  // namespace vitune::data
