// Opening a VTAB-1k list file ("<relative path> <label>" per line).
#include <cctype>
#include <filesystem>
#include <fstream>

#include "data/image_file_dataset.h"

namespace vitune::data {

namespace {

std::string trim(const std::string& text) {
  size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return text.substr(begin, end - begin);
}

// A label written as decimal digits only, below 2^31.
bool parse_label(const std::string& text, int64_t& label) {
  if (text.empty() || text.size() > 10) return false;
  label = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    label = label * 10 + (c - '0');
  }
  return label <= 0x7fffffff;
}

}  // namespace

ImageFileDataset open_vtab_list(const std::string& list_file, const std::string& root,
                                int num_classes) {
  std::ifstream in(list_file);
  VITUNE_CHECK(in.good(), "VTAB list file ", list_file, ": cannot open it");
  std::vector<std::string> paths;
  std::vector<int64_t> labels;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    line = trim(line);
    if (line.empty()) continue;
    const size_t split = line.find_last_of(" \t");
    VITUNE_CHECK(split != std::string::npos, "VTAB list file ", list_file, " line ", number, ": \"",
                 line, "\" has no label (expected \"<relative path> <label>\")");
    const std::string relative = trim(line.substr(0, split));
    const std::string label_text = line.substr(split + 1);
    int64_t label = 0;
    VITUNE_CHECK(parse_label(label_text, label), "VTAB list file ", list_file, " line ", number,
                 ": label \"", label_text, "\" is not a non-negative integer");
    VITUNE_CHECK(num_classes <= 0 || label < num_classes, "VTAB list file ", list_file, " line ",
                 number, ": label ", label, " is out of range for ", num_classes, " classes");
    const std::string path = (std::filesystem::path(root) / relative).string();
    std::error_code error;
    VITUNE_CHECK(std::filesystem::is_regular_file(path, error), "VTAB list file ", list_file,
                 " line ", number, ": image file ", path, " does not exist");
    paths.push_back(path);
    labels.push_back(label);
  }
  VITUNE_CHECK(!in.bad(), "VTAB list file ", list_file, ": read error");
  return ImageFileDataset(std::move(paths), std::move(labels), num_classes,
                          "VTAB list file " + list_file);
}

}  // namespace vitune::data
