// The image size limit: a header claiming more than 32768 pixels a side or 2^26 pixels
// in all is refused before decoding (stb_image would allocate for it), and so is one
// claiming more pixels than its file's bytes could hold; images at the limit's edge in
// one dimension still decode.
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

TEST(ImageLimits, APngChunkLongerThanTheFileIsRefused) {
  std::vector<uint8_t> bytes = png_header(3, 4);
  for (uint8_t b : big_endian(uint32_t(1) << 31)) bytes.push_back(b);  // an IDAT claiming 2 GiB
  for (char c : std::string("IDATxx")) bytes.push_back(uint8_t(c));
  EXPECT_EQ(decode_error(bytes),
            "image file test.png: corrupt PNG: a chunk claims 2147483648 bytes of data, more than the 2 left in "
            "the file");
}

// A run-length TGA header (type 10, 32-bit pixels) claiming 20728 x 2613 pixels, the
// header the fuzzer found, followed by 13 bytes: 31 bytes in all. stb_image would read
// zeros past the end for 54 million pixels (over 10 s under the fuzzer) and return them.
std::vector<uint8_t> tga_rle_header_claiming_20728x2613() {
  std::vector<uint8_t> bytes{0x0f, 0x00, 0x0a, 0xff, 0xff, 0xff, 0xff, 0x10, 0xca, 0x46, 0x49, 0x46,
                             0xf8, 0x50, 0x35, 0x0a, 0x20, 0x0a};
  for (char c : std::string("20325\n 32901,")) bytes.push_back(uint8_t(c));
  return bytes;
}

TEST(ImageLimits, MorePixelsThanTheFileCouldHoldIsRefused) {
  const std::vector<uint8_t> bytes = tga_rle_header_claiming_20728x2613();
  ASSERT_EQ(bytes.size(), 31u);
  EXPECT_EQ(decode_error(bytes),
            "image file test.png: 20728x2613 pixels cannot be held in 31 bytes (no format packs more than 8256 "
            "pixels a byte); the file is cut short or its header is wrong");
}

}  // namespace
}  // namespace vitune::testing
