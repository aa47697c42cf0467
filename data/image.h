// An 8-bit image as datasets hand it out: height x width x channels bytes, interleaved
// (HWC, row-major). Channels are 1 (grey) or 3 (RGB).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace vitune::data {

// The height and width of an image.
struct ImageSize {
  int height = 0;
  int width = 0;
  bool operator==(const ImageSize& other) const { return height == other.height && width == other.width; }
};

struct Image {
  int height = 0;
  int width = 0;
  int channels = 0;
  std::vector<uint8_t> pixels;  // height * width * channels bytes

  uint8_t at(int y, int x, int c) const {
    return pixels[(size_t(y) * size_t(width) + size_t(x)) * size_t(channels) + size_t(c)];
  }
};

}  // namespace vitune::data
