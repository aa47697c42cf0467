// Fuzzes .npz reading end to end: the zip reader (end record, zip64 records, central
// directory, local headers, stored and deflated entries, CRC-32) and each .npy array.
// Any input must either load or throw vitune::Error.
#include <cstdint>

#include "engine/error.h"
#include "fuzz/temp_file.h"
#include "nn/npz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = vitune::fuzz::write_temp_file("input.npz", data, size);
  try {
    vitune::nn::read_npz(path);
  } catch (const vitune::Error&) {
  }
  return 0;
}
