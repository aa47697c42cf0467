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

namespace {

// The largest image decoded: 32768 pixels a side and 2^26 pixels (8192 x 8192) in all,
// 192 MiB of RGB (stb_image's GIF reader needs about 9 bytes a pixel). A header that
// claims more is refused before anything is allocated for it.
constexpr int kMaxImageSide = 32768;
constexpr int64_t kMaxImagePixels = int64_t(1) << 26;

// The most pixels any format stb_image reads packs into one byte of the file: PNG's
// 1-bit rows (8 pixels a byte) through deflate, whose best ratio is 1032:1 (a 258-byte
// match in two bits). GIF's LZW (at most 4096 pixels a 12-bit code), JPEG (at least a
// bit per 8x8 block), TGA and PSD run lengths (at most 128 pixels a packet) and the
// uncompressed formats pack fewer. A header claiming more pixels than its file could
// hold is a file cut short or a forged header: stb_image's TGA reader, for one, would
// run over every claimed pixel reading zeros past the end, and return them as an image.
constexpr int64_t kMaxPixelsPerByte = 8 * 1032;

// The stb_image of Debian 12 (2022-09) does not check that a JPEG Huffman table (a DHT
// segment record: a class/id byte, 16 code counts, then the codes) lists at most 256
// codes, and writes past its tables when one lists more. Such files are refused here,
// before stb_image reads them; records are followed the way stb_image reads them.
void refuse_oversized_jpeg_huffman_tables(const std::vector<uint8_t>& bytes, const std::string& path) {
  // A JPEG starts with the marker SOI: 0xFF (any number of them, as fill) and 0xD8.
  size_t position = 0;
  while (position < bytes.size() && bytes[position] == 0xFF) ++position;
  if (position == 0 || position == bytes.size() || bytes[position] != 0xD8) return;
  ++position;
  auto byte_at = [&](size_t i) -> size_t { return i < bytes.size() ? bytes[i] : 0; };
  while (position + 4 <= bytes.size()) {
    const uint8_t marker = bytes[position + 1];
    if (bytes[position] != 0xFF || marker == 0xFF) {  // entropy-coded data, or a fill byte
      ++position;
      continue;
    }
    if (marker == 0x00 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD9)) {  // no length field
      position += 2;
      continue;
    }
    const size_t length = byte_at(position + 2) << 8 | byte_at(position + 3);
    if (marker == 0xC4) {
      const size_t end = position + 2 + length;
      for (size_t record = position + 4; record < end;) {
        size_t codes = 0;
        for (size_t i = 1; i <= 16; ++i) codes += byte_at(record + i);
        if (codes > 256) {
          throw BadImageError(cat("image file ", path, ": corrupt JPEG: a Huffman table lists ", codes,
                                  " codes, more than 256"));
        }
        record += 17 + codes;
      }
    }
    position += 2 + length;
  }
}

// The same stb_image grows its buffer for a PNG's image data (IDAT chunks) to the
// length a chunk claims before reading it, so a few bytes claiming a gigabyte-long chunk
// allocate a gigabyte. A chunk (a 4-byte big-endian length, a 4-byte type, the data
// and a 4-byte CRC) that claims more bytes than the file has left is refused here.
void refuse_overlong_png_chunks(const std::vector<uint8_t>& bytes, const std::string& path) {
  static const uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kSignature, 8) != 0) return;
  for (size_t position = 8; position + 8 <= bytes.size();) {
    const uint64_t length = uint64_t(bytes[position]) << 24 | uint64_t(bytes[position + 1]) << 16 |
                            uint64_t(bytes[position + 2]) << 8 | bytes[position + 3];
    const uint64_t left = bytes.size() - (position + 8);
    if (length > left) {
      throw BadImageError(cat("image file ", path, ": corrupt PNG: a chunk claims ", length,
                              " bytes of data, more than the ", left, " left in the file"));
    }
    position += 12 + size_t(length);
  }
}

// The same stb_image reads the width, height and maximum value of a binary PNM (P5,
// P6) header into an int without an overflow check. A number of more than 9 digits
// is refused here; whitespace and comments are skipped the way stb_image skips them.
void refuse_overflowing_pnm_header(const std::vector<uint8_t>& bytes, const std::string& path) {
  if (bytes.size() < 2 || bytes[0] != 'P' || (bytes[1] != '5' && bytes[1] != '6')) return;
  auto is_space = [](uint8_t c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
  size_t position = 2;
  for (const char* field : {"width", "height", "maximum value"}) {
    while (position < bytes.size()) {
      if (is_space(bytes[position])) {
        ++position;
      } else if (bytes[position] == '#') {
        while (position < bytes.size() && bytes[position] != '\n' && bytes[position] != '\r') ++position;
      } else {
        break;
      }
    }
    size_t digits = 0;
    for (; position < bytes.size() && bytes[position] >= '0' && bytes[position] <= '9'; ++position) ++digits;
    if (digits > 9) {
      throw BadImageError(cat("image file ", path, ": corrupt PNM header: its ", field, " has ", digits,
                              " digits, more than 9"));
    }
  }
}

}  // namespace

Image decode_image(const std::vector<uint8_t>& bytes, const std::string& path) {
  if (bytes.empty()) throw BadImageError(cat("image file ", path, ": the file is empty"));
  if (bytes.size() > size_t(INT_MAX)) {
    throw BadImageError(cat("image file ", path, ": ", bytes.size(), " bytes is too large"));
  }
  refuse_oversized_jpeg_huffman_tables(bytes, path);
  refuse_overflowing_pnm_header(bytes, path);
  const auto* data = reinterpret_cast<const stbi_uc*>(bytes.data());
  const int length = int(bytes.size());
  int width = 0, height = 0, file_channels = 0;
  if (!stbi_info_from_memory(data, length, &width, &height, &file_channels)) {
    throw BadImageError(
        cat("image file ", path, ": not a readable image (", stbi_failure_reason(), ")"));
  }
  if (width <= 0 || height <= 0 || width > kMaxImageSide || height > kMaxImageSide ||
      int64_t(width) * height > kMaxImagePixels) {
    throw BadImageError(cat("image file ", path, ": ", width, "x", height, " pixels is larger than the limit of ",
                            kMaxImageSide, " a side and ", kMaxImagePixels, " pixels in all"));
  }
  refuse_overlong_png_chunks(bytes, path);  // after stb_image has read a PNG's header
  if (int64_t(width) * height > int64_t(bytes.size()) * kMaxPixelsPerByte) {
    throw BadImageError(cat("image file ", path, ": ", width, "x", height, " pixels cannot be held in ", bytes.size(),
                            " bytes (no format packs more than ", kMaxPixelsPerByte,
                            " pixels a byte); the file is cut short or its header is wrong"));
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
