// Fuzzes image decoding through stb_image (PNG, JPEG, BMP, GIF, PNM, ...): any input
// must decode to an image whose pixel count matches its size, or throw BadImageError.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "data/dataset.h"
#include "data/image_decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> bytes(data, data + size);
  try {
    const vitune::data::Image image = vitune::data::decode_image(bytes, "fuzz input");
    if (image.channels != 1 && image.channels != 3) std::abort();
    if (image.pixels.size() != size_t(image.height) * size_t(image.width) * size_t(image.channels)) std::abort();
  } catch (const vitune::data::BadImageError&) {
  }
  return 0;
}
