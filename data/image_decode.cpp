// Image decoding with stb_image (this file holds its one implementation). stb keeps its
// failure reason per thread, so decoding from several threads at once is safe.
#include "data/image_decode.h"

#include <climits>
#include <cstring>
#include <memory>

#include "data/dataset.h"
#include "data/file_bytes.h"

#define STB_IMAGE_IMPLEMENTATION
#define STBI_FAILURE_USERMSG
#include <stb/stb_image.h>

namespace vitune::data {

Image decode_image(const std::vector<uint8_t>& bytes, const std::string& path) {
  if (bytes.empty()) throw BadImageError(cat("image file ", path, ": the file is empty"));
  if (bytes.size() > size_t(INT_MAX)) {
    throw BadImageError(cat("image file ", path, ": ", bytes.size(), " bytes is too large"));
  }
  const auto* data = reinterpret_cast<const stbi_uc*>(bytes.data());
  const int length = int(bytes.size());
  int width = 0, height = 0, file_channels = 0;
  if (!stbi_info_from_memory(data, length, &width, &height, &file_channels)) {
    throw BadImageError(
        cat("image file ", path, ": not a readable image (", stbi_failure_reason(), ")"));
  }
  const int channels = file_channels <= 2 ? 1 : 3;
  std::unique_ptr<stbi_uc, void (*)(void*)> pixels(
      stbi_load_from_memory(data, length, &width, &height, &file_channels, channels),
      stbi_image_free);
  if (!pixels) {
    throw BadImageError(cat("image file ", path, ": cannot decode (", stbi_failure_reason(), ")"));
  }
  Image image;
  image.height = height;
  image.width = width;
  image.channels = channels;
  const size_t count = size_t(height) * size_t(width) * size_t(channels);
  image.pixels.assign(pixels.get(), pixels.get() + count);
  return image;
}

Image read_image_file(const std::string& path) {
  std::vector<uint8_t> bytes;
  try {
    bytes = read_file_bytes(path);
  } catch (const Error& error) {
    throw BadImageError(error.what());
  }
  return decode_image(bytes, path);
}

}  // namespace vitune::data
