// An in-memory dataset for the subset and loader tests: given labels, image i is
// pattern_image(height, width, channels, i); chosen examples can be made bad images
// (load throws BadImageError) or other failures (load throws vitune::Error), or be a
// different size.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data_test_files.h"

namespace vitune::data::testing {

class FakeDataset : public Dataset {
 public:
  FakeDataset(std::vector<int64_t> labels, int num_classes, int height = 4, int width = 5,
              int channels = 3)
      : labels_(std::move(labels)),
        num_classes_(num_classes),
        height_(height),
        width_(width),
        channels_(channels) {}

  std::set<int64_t> bad_images;  // load throws BadImageError
  std::set<int64_t> failing;     // load throws vitune::Error
  std::set<int64_t> wrong_size;  // load returns a 1 pixel taller image

  int64_t size() const override { return int64_t(labels_.size()); }
  int num_classes() const override { return num_classes_; }
  int64_t label(int64_t i) const override {
    check_index(*this, i, "fake dataset");
    return labels_[size_t(i)];
  }
  Image load(int64_t i) const override {
    check_index(*this, i, "fake dataset");
    if (bad_images.count(i)) throw BadImageError("image file " + describe(i) + ": corrupt");
    if (failing.count(i)) throw Error("fake dataset: " + describe(i) + " failed");
    return pattern_image(height_ + (wrong_size.count(i) ? 1 : 0), width_, channels_, int(i));
  }
  std::string describe(int64_t i) const override { return "fake/" + std::to_string(i) + ".png"; }

 private:
  std::vector<int64_t> labels_;
  int num_classes_;
  int height_, width_, channels_;
};

// Labels 0, 1, ..., classes-1, 0, 1, ... for n examples.
inline std::vector<int64_t> cycling_labels(int64_t n, int classes) {
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < n; ++i) labels.push_back(i % classes);
  return labels;
}

}  // namespace vitune::data::testing
