// The lazily decoded image-file dataset.
#include "data/image_file_dataset.h"

#include <algorithm>
#include <limits>

#include "data/image_decode.h"

namespace vitune::data {

ImageFileDataset::ImageFileDataset(std::vector<std::string> paths, std::vector<int64_t> labels,
                                   int num_classes, const std::string& source)
    : paths_(std::move(paths)), labels_(std::move(labels)) {
  VITUNE_CHECK(paths_.size() == labels_.size(), source, ": ", paths_.size(), " files but ",
               labels_.size(), " labels");
  int64_t largest = -1;
  for (size_t i = 0; i < labels_.size(); ++i) {
    const int64_t limit = num_classes > 0 ? num_classes : std::numeric_limits<int>::max();
    VITUNE_CHECK(labels_[i] >= 0 && labels_[i]<limit, source, ": label ", labels_[i], " of ",
                                               paths_[i], " is out of range", num_classes> 0
                     ? cat(" for ", num_classes, " classes")
                     : std::string());
    largest = std::max(largest, labels_[i]);
  }
  num_classes_ = num_classes > 0 ? num_classes : int(largest + 1);
}

int64_t ImageFileDataset::label(int64_t i) const {
  check_index(*this, i, "image file dataset");
  return labels_[size_t(i)];
}

Image ImageFileDataset::load(int64_t i) const {
  check_index(*this, i, "image file dataset");
  return read_image_file(paths_[size_t(i)]);
}

std::string ImageFileDataset::describe(int64_t i) const {
  check_index(*this, i, "image file dataset");
  return paths_[size_t(i)];
}

}  // namespace vitune::data
