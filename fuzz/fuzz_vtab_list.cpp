// Fuzzes VTAB-1k list files ("<relative path> <label>" per line) against a folder
// holding a readable and an unreadable image; the first byte picks num_classes.
#include <cstdint>

#include "data/image_file_dataset.h"
#include "fuzz/exercise_dataset.h"
#include "fuzz/image_root.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string& root = vitune::fuzz::image_root();
  const std::string list = vitune::fuzz::write_temp_file("list.txt", data + 1, size - 1);
  try {
    vitune::fuzz::exercise_dataset(vitune::data::open_vtab_list(list, root, int(data[0] % 8) - 1));
  } catch (const vitune::Error&) {
  }
  return 0;
}
