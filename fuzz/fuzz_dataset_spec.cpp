// Fuzzes the dataset-spec parser and its promise about the canonical form: a spec that
// parses writes back a canonical string that parses to the same canonical string.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "data/dataset_spec.h"
#include "engine/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string canonical;
  try {
    canonical = vitune::data::parse_dataset_spec(text).canonical();
  } catch (const vitune::Error&) {
    return 0;
  }
  if (vitune::data::parse_dataset_spec(canonical).canonical() != canonical) std::abort();
  return 0;
}
