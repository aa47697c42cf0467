// The image size limit: a header claiming more than 32768 pixels a side or 2^26 pixels
// in all is refused before decoding (stb_image would allocate for it); images at the
// limit's edge in one dimension still decode.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/image_decode.h"

namespace vitune::testing {
namespace {

std::vector<uint8_t> big_endian(uint32_t value) {
  return {uint8_t(value >> 24), uint8_t(value >> 16), uint8_t(value >> 8), uint8_t(value)};
}

// A PNG signature and IHDR chunk (8-bit grey) claiming width x height; no pixels.
std::vector<uint8_t> png_header(uint32_t width, uint32_t height) {
  std::vector<uint8_t> bytes{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  for (uint8_t b : big_endian(13)) bytes.push_back(b);
  for (char c : std::string("IHDR")) bytes.push_back(uint8_t(c));
  for (uint8_t b : big_endian(width)) bytes.push_back(b);
  for (uint8_t b : big_endian(height)) bytes.push_back(b);
  for (uint8_t b : {8, 0, 0, 0, 0}) bytes.push_back(b);
  for (uint8_t b : big_endian(0)) bytes.push_back(b);  // CRC, not checked by stb_image
  return bytes;
}

std::string decode_error(const std::vector<uint8_t>& bytes) {
  try {
    data::decode_image(bytes, "test.png");
  } catch (const data::BadImageError& e) {
    return e.what();
  }
  return "";
}

TEST(ImageLimits, TooManyPixelsIsRefusedBeforeDecoding) {
  EXPECT_EQ(decode_error(png_header(16384, 8192)),
            "image file test.png: 16384x8192 pixels is larger than the limit of 32768 a side and 67108864 "
            "pixels in all");
}

TEST(ImageLimits, TooWideIsRefused) {
  EXPECT_NE(decode_error(png_header(40000, 2)).find("40000x2 pixels is larger than the limit"), std::string::npos);
}

TEST(ImageLimits, WithinTheLimitFailsOnlyForTheMissingPixels) {
  const std::string message = decode_error(png_header(32768, 2));
  EXPECT_EQ(message.find("larger than the limit"), std::string::npos) << message;
  EXPECT_NE(message.find("image file test.png"), std::string::npos) << message;
}

}  // namespace
}  // namespace vitune::testing
