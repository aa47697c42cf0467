// Opening an FGVC json split ({"relative/path.jpg": class, ...}).
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "data/image_file_dataset.h"

namespace vitune::data {

ImageFileDataset open_fgvc_json(const std::string& json_file, const std::string& root,
                                int num_classes) {
  std::ifstream in(json_file);
  VITUNE_CHECK(in.good(), "FGVC json file ", json_file, ": cannot open it");
  nlohmann::json split;
  try {
    in >> split;
  } catch (const nlohmann::json::exception& error) {
    throw Error(cat("FGVC json file ", json_file, ": not valid JSON (", error.what(), ")"));
  }
  VITUNE_CHECK(split.is_object(), "FGVC json file ", json_file,
               ": expected an object mapping image paths to integer classes");
  std::vector<std::string> paths;
  std::vector<int64_t> labels;
  for (const auto& [relative, value] : split.items()) {
    VITUNE_CHECK(value.is_number_integer() && value.get<int64_t>() >= 0 &&
                     value.get<int64_t>() <= 0x7fffffff,
                 "FGVC json file ", json_file, ": the class of \"", relative, "\" is ",
                 value.dump(), ", expected a non-negative integer");
    const int64_t label = value.get<int64_t>();
    VITUNE_CHECK(num_classes <= 0 || label < num_classes, "FGVC json file ", json_file,
                 ": the class ", label, " of \"", relative, "\" is out of range for ", num_classes,
                 " classes");
    const std::string path = (std::filesystem::path(root) / relative).string();
    std::error_code error;
    VITUNE_CHECK(std::filesystem::is_regular_file(path, error), "FGVC json file ", json_file,
                 ": image file ", path, " (for key \"", relative, "\") does not exist");
    paths.push_back(path);
    labels.push_back(label);
  }
  return ImageFileDataset(std::move(paths), std::move(labels), num_classes,
                          "FGVC json file " + json_file);
}

}  // namespace vitune::data
