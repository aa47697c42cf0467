// For dataset fuzz targets: reads the label, description and pixels of a dataset's
// first examples and checks what every dataset promises (labels in range, pixel count
// equal to height * width * channels), aborting where a promise is broken.
#pragma once

#include <cstdint>
#include <cstdlib>

#include "data/dataset.h"

namespace vitune::fuzz {

inline void exercise_dataset(const data::Dataset& dataset) {
  const int64_t count = dataset.size() < 16 ? dataset.size() : 16;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t label = dataset.label(i);
    if (label < 0 || label >= dataset.num_classes()) std::abort();
    dataset.describe(i);
    try {
      const data::Image image = dataset.load(i);
      if (image.channels != 1 && image.channels != 3) std::abort();
      if (image.pixels.size() != size_t(image.height) * size_t(image.width) * size_t(image.channels)) {
        std::abort();
      }
    } catch (const data::BadImageError&) {
    }
  }
}

}  // namespace vitune::fuzz
