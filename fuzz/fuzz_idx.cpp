// Fuzzes the IDX reader with an images file and a labels file cut from one input: the
// first byte, times 16, is the images file's length (capped at what is there), the
// rest is the labels file. Either file may be gzipped. The dataset, when it opens, has
// its first examples read.
#include <cstdint>

#include "data/idx_dataset.h"
#include "fuzz/exercise_dataset.h"
#include "fuzz/temp_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  size_t images_size = size_t(data[0]) * 16;
  if (images_size > size - 1) images_size = size - 1;
  const std::string images = vitune::fuzz::write_temp_file("images-idx3-ubyte", data + 1, images_size);
  const std::string labels =
      vitune::fuzz::write_temp_file("labels-idx1-ubyte", data + 1 + images_size, size - 1 - images_size);
  try {
    vitune::data::IdxDataset dataset(images, labels);
    vitune::fuzz::exercise_dataset(dataset);
  } catch (const vitune::Error&) {
  }
  return 0;
}
