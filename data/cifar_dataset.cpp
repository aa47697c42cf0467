// CIFAR binary reading and validation.
#include "data/cifar_dataset.h"

#include <algorithm>

#include "data/file_bytes.h"

namespace vitune::data {

namespace {

constexpr int kSide = 32;
constexpr size_t kPlane = size_t(kSide) * kSide;
constexpr size_t kPixelBytes = 3 * kPlane;

}  // namespace

CifarDataset::CifarDataset(CifarVariant variant, const std::vector<std::string>& files,
                           int num_classes) {
  const bool hundred = variant == CifarVariant::Cifar100;
  const char* name = hundred ? "CIFAR-100" : "CIFAR-10";
  const int format_classes = hundred ? 100 : 10;
  const size_t label_bytes = hundred ? 2 : 1;
  const size_t record = label_bytes + kPixelBytes;
  VITUNE_CHECK(!files.empty(), name, ": no batch files given");
  VITUNE_CHECK(num_classes <= format_classes, name, ": num_classes ", num_classes,
               " is more than the format's ", format_classes);
  const int limit = num_classes > 0 ? num_classes : format_classes;
  for (const std::string& path : files) {
    const std::vector<uint8_t> bytes = read_file_bytes(path);
    VITUNE_CHECK(bytes.size() % record == 0, name, " file ", path, ": ", bytes.size(),
                 " bytes is not a whole number of ", record, "-byte records (",
                 bytes.size() / record, " records and ", bytes.size() % record, " bytes left)");
    files_.push_back({path, int64_t(labels_.size())});
    const size_t records = bytes.size() / record;
    for (size_t r = 0; r < records; ++r) {
      const uint8_t* at = bytes.data() + r * record;
      const uint8_t label = at[label_bytes - 1];
      VITUNE_CHECK(label < limit, name, " file ", path, ": record ", r, " has label ", int(label),
                   ", expected below ", limit);
      labels_.push_back(label);
      pixels_.insert(pixels_.end(), at + label_bytes, at + record);
    }
  }
  const int largest = labels_.empty() ? -1 : int(*std::max_element(labels_.begin(), labels_.end()));
  num_classes_ = num_classes > 0 ? num_classes : largest + 1;
}

int64_t CifarDataset::label(int64_t i) const {
  check_index(*this, i, "CIFAR dataset");
  return labels_[size_t(i)];
}

Image CifarDataset::load(int64_t i) const {
  check_index(*this, i, "CIFAR dataset");
  Image image;
  image.height = kSide;
  image.width = kSide;
  image.channels = 3;
  image.pixels.resize(kPixelBytes);
  const uint8_t* planes = pixels_.data() + size_t(i) * kPixelBytes;
  for (size_t p = 0; p < kPlane; ++p) {
    for (size_t c = 0; c < 3; ++c) image.pixels[p * 3 + c] = planes[c * kPlane + p];
  }
  return image;
}

std::string CifarDataset::describe(int64_t i) const {
  check_index(*this, i, "CIFAR dataset");
  const auto file =
      std::upper_bound(files_.begin(), files_.end(), i,
                       [](int64_t index, const FileRange& range) { return index < range.first; }) -
      1;
  return cat(file->path, " record ", i - file->first);
}

}  // namespace vitune::data
