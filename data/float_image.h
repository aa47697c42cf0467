// The working form of an image inside the transforms: float values in channel planes
// (CHW, row-major), pixel / 255 before normalisation.
#pragma once

#include <cstddef>

#include "data/float_buffer.h"
#include "data/image.h"

namespace vitune::data {

struct FloatImage {
  int channels = 0;
  int height = 0;
  int width = 0;
  FloatBuffer values;  // channels * height * width

  FloatImage() = default;
  // Values uninitialised.
  FloatImage(int channels, int height, int width)
      : channels(channels),
        height(height),
        width(width),
        values(size_t(channels) * size_t(height) * size_t(width)) {}

  float* plane(int c) { return values.data() + size_t(c) * size_t(height) * size_t(width); }
  const float* plane(int c) const {
    return values.data() + size_t(c) * size_t(height) * size_t(width);
  }
};

// Planes of pixel / 255. Throws unless the image has 1 or 3 channels and its pixel count
// matches its size.
FloatImage to_float_image(const Image& image);

}  // namespace vitune::data
