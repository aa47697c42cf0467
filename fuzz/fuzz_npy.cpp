// Fuzzes the .npy parser on its in-memory entry point: magic, version, header length,
// the header dict, descr and the data length against the shape.
#include <cstdint>

#include "engine/error.h"
#include "nn/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    vitune::nn::parse_npy(data, size, "fuzz input");
  } catch (const vitune::Error&) {
  }
  return 0;
}
