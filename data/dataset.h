// The interface every dataset implements: a fixed number of labelled examples, each
// loadable on its own. Labels are known without decoding (they live in memory), so
// subsets and stratification never touch the images.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "data/image.h"
#include "engine/error.h"

namespace vitune::data {

class Dataset {
 public:
  virtual ~Dataset() = default;

  virtual int64_t size() const = 0;
  virtual int num_classes() const = 0;
  // The label of example i, in [0, num_classes()).
  virtual int64_t label(int64_t i) const = 0;
  // Decodes example i. Thread-safe: the loader calls it from several threads at once.
  // Throws BadImageError when the image cannot be read or decoded.
  virtual Image load(int64_t i) const = 0;
  // Where example i comes from, for messages: a file path or "file.gz record N".
  virtual std::string describe(int64_t i) const = 0;
  // The size every image has when the format fixes it (IDX, CIFAR); none when images
  // may differ (folders, lists), which a model's preprocessing resizes as a matter of course.
  virtual std::optional<ImageSize> fixed_size() const { return std::nullopt; }
};

// An image that cannot be read or decoded. The message names the file. The loader can
// skip such examples and count them (LoaderOptions::skip_bad_images); every other
// error stops it.
class BadImageError : public Error {
 public:
  using Error::Error;
};

// Throws unless 0 <= i < dataset.size(); `what` names the caller in the message.
void check_index(const Dataset& dataset, int64_t i, const char* what);

}  // namespace vitune::data
