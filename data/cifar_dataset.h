// The binary versions of CIFAR-10 and CIFAR-100: files of fixed-size records, each one
// label byte (CIFAR-100: a coarse label byte, then the fine label byte, which is the one
// used) followed by 3072 bytes of 32x32 pixels as three planes R, G, B. A split is one
// or more such files read fully into memory, their records in file order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace vitune::data {

enum class CifarVariant { Cifar10, Cifar100 };

class CifarDataset : public Dataset {
 public:
  // Throws naming the file when a file cannot be read, its length is not a whole number
  // of records, or a label is out of range (10 or 100 classes, or num_classes when > 0).
  // num_classes <= 0: the largest label + 1.
  CifarDataset(CifarVariant variant, const std::vector<std::string>& files, int num_classes = 0);

  int64_t size() const override { return int64_t(labels_.size()); }
  int num_classes() const override { return num_classes_; }
  int64_t label(int64_t i) const override;
  Image load(int64_t i) const override;
  std::string describe(int64_t i) const override;
  std::optional<ImageSize> fixed_size() const override { return ImageSize{32, 32}; }

 private:
  struct FileRange {
    std::string path;
    int64_t first;  // index of the file's first record in the dataset
  };
  std::vector<FileRange> files_;
  std::vector<uint8_t> pixels_;  // 3072 bytes per record, planar RGB
  std::vector<uint8_t> labels_;
  int num_classes_ = 0;
};

}  // namespace vitune::data
