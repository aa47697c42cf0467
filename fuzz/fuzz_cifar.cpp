// Fuzzes the CIFAR binary reader: the first byte picks CIFAR-10 or CIFAR-100 and a
// num_classes (0: from the labels), the rest is one batch file.
#include <cstdint>

#include "data/cifar_dataset.h"
#include "fuzz/exercise_dataset.h"
#include "fuzz/temp_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto variant = data[0] & 1 ? vitune::data::CifarVariant::Cifar100 : vitune::data::CifarVariant::Cifar10;
  const int num_classes = int(data[0] >> 1) - 8;  // -8 .. 119: unset, in range and too many
  const std::string path = vitune::fuzz::write_temp_file("data_batch.bin", data + 1, size - 1);
  try {
    vitune::data::CifarDataset dataset(variant, {path}, num_classes);
    vitune::fuzz::exercise_dataset(dataset);
  } catch (const vitune::Error&) {
  }
  return 0;
}
