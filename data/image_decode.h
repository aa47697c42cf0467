// Decoding JPEG and PNG files (and the other formats stb_image reads) into an Image.
// Grey and grey+alpha files become 1-channel images, everything else RGB; alpha is
// dropped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/image.h"

namespace vitune::data {

// Decodes `bytes`, which came from `path` (named in errors). Throws BadImageError,
// also for an image larger than 32768 pixels a side or 2^26 pixels in all.
Image decode_image(const std::vector<uint8_t>& bytes, const std::string& path);

// Reads and decodes the file at `path`. Throws BadImageError naming the file when it
// cannot be read or decoded.
Image read_image_file(const std::string& path);

}  // namespace vitune::data
