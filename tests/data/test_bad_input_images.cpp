// Images the fuzzer found to break stb_image, kept as regression inputs in tests/golden:
// a GIF header claiming 50306 x 7936 pixels (stb_image would allocate and clear 1.6 GB
// for it) and two JPEGs whose Huffman table lists more than 256 codes (stb_image would
// write past its tables), one with fill bytes before its start marker, and a PPM whose
// width has 61 digits (stb_image would overflow an int). All must be refused with a
// clear error naming the file.
#include <gtest/gtest.h>

#include <string>

#include "data/dataset.h"
#include "data/image_decode.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

std::string decode_error(const std::string& name) {
  try {
    data::read_image_file(data_path(name));
  } catch (const data::BadImageError& e) {
    return e.what();
  }
  return "";
}

TEST(BadInputImages, GifHeaderClaimingTooManyPixels) {
  EXPECT_EQ(decode_error("gif_50306x7936_header.gif"),
            "image file " + data_path("gif_50306x7936_header.gif") +
                ": 50306x7936 pixels is larger than the limit of 32768 a side and 67108864 pixels in all");
}

TEST(BadInputImages, JpegHuffmanTableWithTooManyCodes) {
  for (const std::string name : {"jpeg_dht_over_256_codes.jpg", "jpeg_fill_before_soi_dht_over_256_codes.jpg"}) {
    const std::string message = decode_error(name);
    EXPECT_NE(message.find("image file " + data_path(name) + ": corrupt JPEG: a Huffman table lists"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("codes, more than 256"), std::string::npos) << message;
  }
}

TEST(BadInputImages, PnmWidthWithTooManyDigits) {
  EXPECT_EQ(decode_error("pnm_width_int_overflow.ppm"),
            "image file " + data_path("pnm_width_int_overflow.ppm") +
                ": corrupt PNM header: its width has 61 digits, more than 9");
}

}  // namespace
}  // namespace vitune::testing
