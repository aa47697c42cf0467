// Fuzzes the safetensors reader (header length, UTF-8, JSON header, entries, tiling):
// any input must either load or throw vitune::Error; a loaded tensor's bytes are read
// in full so that a view past the mapping would be caught.
#include <cstdint>

#include "engine/error.h"
#include "fuzz/temp_file.h"
#include "nn/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = vitune::fuzz::write_temp_file("input.safetensors", data, size);
  try {
    vitune::nn::SafetensorsFile file = vitune::nn::read_safetensors(path);
    uint64_t sum = 0;
    for (const auto& [name, tensor] : file.tensors) {
      const auto* bytes = static_cast<const uint8_t*>(tensor.raw());
      for (size_t i = 0; i < tensor.nbytes(); ++i) sum += bytes[i];
    }
    if (sum == 1) return 0;  // keeps the reads above from being optimised away
  } catch (const vitune::Error&) {
  }
  return 0;
}
