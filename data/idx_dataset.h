// The IDX format of MNIST and Fashion-MNIST: an images file (magic 0x00000803, then
// big-endian u32 count, rows, cols, then count*rows*cols bytes) and a labels file (magic
// 0x00000801, u32 count, then count bytes). Either may be gzipped. Both files are read
// fully into memory when the dataset is opened.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace vitune::data {

class IdxDataset : public Dataset {
 public:
  // Reads and validates both files: magic numbers, dimensions, equal counts, exact
  // lengths, labels below num_classes. num_classes <= 0: the largest label + 1.
  IdxDataset(const std::string& images_path, const std::string& labels_path, int num_classes = 0);

  int64_t size() const override { return count_; }
  int num_classes() const override { return num_classes_; }
  int64_t label(int64_t i) const override;
  Image load(int64_t i) const override;
  std::string describe(int64_t i) const override;
  std::optional<ImageSize> fixed_size() const override { return ImageSize{rows_, cols_}; }

 private:
  std::string images_path_;
  int64_t count_ = 0;
  int rows_ = 0;
  int cols_ = 0;
  int num_classes_ = 0;
  std::vector<uint8_t> pixels_;  // the whole images file: 16-byte header, then the pixels
  std::vector<uint8_t> labels_;  // count
};

}  // namespace vitune::data
