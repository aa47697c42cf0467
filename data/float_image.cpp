// Conversion of 8-bit interleaved images to float planes.
#include "data/float_image.h"

#include "engine/error.h"

namespace vitune::data {

FloatImage to_float_image(const Image& image) {
  VITUNE_CHECK(image.channels == 1 || image.channels == 3, "image with ", image.channels,
               " channels, expected 1 (grey) or 3 (RGB)");
  VITUNE_CHECK(image.height > 0 && image.width > 0 &&
                   image.pixels.size() ==
                       size_t(image.height) * size_t(image.width) * size_t(image.channels),
               "image of ", image.height, "x", image.width, "x", image.channels, " holds ",
               image.pixels.size(), " bytes");
  FloatImage out(image.channels, image.height, image.width);
  const size_t count = size_t(image.height) * size_t(image.width);
  const int channels = image.channels;
  for (int c = 0; c < channels; ++c) {
    float* plane = out.plane(c);
    const uint8_t* source = image.pixels.data() + c;
    for (size_t p = 0; p < count; ++p) plane[p] = float(source[p * size_t(channels)]) / 255.0f;
  }
  return out;
}

}  // namespace vitune::data
