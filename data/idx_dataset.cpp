// IDX reading and validation.
#include "data/idx_dataset.h"

#include <algorithm>

#include "data/file_bytes.h"

namespace vitune::data {

namespace {

constexpr uint32_t kImagesMagic = 0x00000803;
constexpr uint32_t kLabelsMagic = 0x00000801;
constexpr size_t kImagesHeader = 16;
constexpr size_t kLabelsHeader = 8;

uint32_t big_endian_u32(const std::vector<uint8_t>& bytes, size_t offset) {
  return (uint32_t(bytes[offset]) << 24) | (uint32_t(bytes[offset + 1]) << 16) |
         (uint32_t(bytes[offset + 2]) << 8) | uint32_t(bytes[offset + 3]);
}

std::string hex32(uint32_t value) {
  static const char digits[] = "0123456789abcdef";
  std::string out = "0x";
  for (int shift = 28; shift >= 0; shift -= 4) out += digits[(value >> shift) & 0xf];
  return out;
}

// Checks the header of an IDX file of `dims` dimensions and returns them.
std::vector<uint32_t> read_header(const std::vector<uint8_t>& bytes, const std::string& path,
                                  uint32_t magic, const char* kind) {
  const int dims = int(magic & 0xff);
  const size_t header = 4 + 4 * size_t(dims);
  VITUNE_CHECK(bytes.size() >= 4, "IDX ", kind, " file ", path, ": ", bytes.size(),
               " bytes is too short for a magic number");
  const uint32_t found = big_endian_u32(bytes, 0);
  VITUNE_CHECK(found == magic, "IDX ", kind, " file ", path, ": magic number ", hex32(found),
               ", expected ", hex32(magic), " (unsigned bytes, ", dims, " dimensions)");
  VITUNE_CHECK(bytes.size() >= header, "IDX ", kind, " file ", path, ": ", bytes.size(),
               " bytes is too short for its ", header, "-byte header");
  std::vector<uint32_t> shape;
  for (int d = 0; d < dims; ++d) shape.push_back(big_endian_u32(bytes, 4 + 4 * size_t(d)));
  return shape;
}

}  // namespace

IdxDataset::IdxDataset(const std::string& images_path, const std::string& labels_path,
                       int num_classes)
    : images_path_(images_path) {
  pixels_ = read_gzip_or_plain(images_path);
  const std::vector<uint32_t> image_shape =
      read_header(pixels_, images_path, kImagesMagic, "images");
  count_ = image_shape[0];
  VITUNE_CHECK(image_shape[1] > 0 && image_shape[2] > 0 && image_shape[1] <= 65536 &&
                   image_shape[2] <= 65536,
               "IDX images file ", images_path, ": image size ", image_shape[1], "x",
               image_shape[2], ", expected rows and columns in [1, 65536]");
  rows_ = int(image_shape[1]);
  cols_ = int(image_shape[2]);
  const size_t image_bytes = size_t(rows_) * size_t(cols_);
  const size_t found = pixels_.size() - kImagesHeader;
  const bool exact = found % image_bytes == 0 && found / image_bytes == size_t(count_);
  VITUNE_CHECK(exact, "IDX images file ", images_path, ": ", count_, " images of ", rows_, "x",
               cols_, " need ", count_, " * ", image_bytes, " bytes after the header, found ",
               found, found / image_bytes < size_t(count_) ? " (truncated)" : " (trailing bytes)");

  labels_ = read_gzip_or_plain(labels_path);
  const std::vector<uint32_t> label_shape =
      read_header(labels_, labels_path, kLabelsMagic, "labels");
  VITUNE_CHECK(int64_t(label_shape[0]) == count_, "IDX labels file ", labels_path, ": ",
               label_shape[0], " labels, but the images file ", images_path, " has ", count_,
               " images");
  VITUNE_CHECK(
      labels_.size() - kLabelsHeader == size_t(count_), "IDX labels file ", labels_path, ": ",
      count_, " labels need ", count_, " bytes after the header, found ",
      labels_.size() - kLabelsHeader,
      labels_.size() - kLabelsHeader < size_t(count_) ? " (truncated)" : " (trailing bytes)");
  labels_.erase(labels_.begin(), labels_.begin() + kLabelsHeader);

  const int largest = labels_.empty() ? -1 : int(*std::max_element(labels_.begin(), labels_.end()));
  if (num_classes <= 0) {
    num_classes_ = largest + 1;
  } else {
    num_classes_ = num_classes;
    for (size_t i = 0; i < labels_.size(); ++i) {
      VITUNE_CHECK(labels_[i] < num_classes, "IDX labels file ", labels_path, ": label ",
                   int(labels_[i]), " of record ", i, " is out of range for ", num_classes,
                   " classes");
    }
  }
}

int64_t IdxDataset::label(int64_t i) const {
  check_index(*this, i, "IDX dataset");
  return labels_[size_t(i)];
}

Image IdxDataset::load(int64_t i) const {
  check_index(*this, i, "IDX dataset");
  Image image;
  image.height = rows_;
  image.width = cols_;
  image.channels = 1;
  const size_t bytes = size_t(rows_) * size_t(cols_);
  const auto first = pixels_.begin() + std::ptrdiff_t(kImagesHeader + size_t(i) * bytes);
  image.pixels.assign(first, first + std::ptrdiff_t(bytes));
  return image;
}

std::string IdxDataset::describe(int64_t i) const { return cat(images_path_, " record ", i); }

}  // namespace vitune::data
