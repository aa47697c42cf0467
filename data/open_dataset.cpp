// Resolving a spec's location to files and building the dataset and its subsets.
#include "data/open_dataset.h"

#include <filesystem>

#include "data/cifar_dataset.h"
#include "data/idx_dataset.h"
#include "data/image_file_dataset.h"
#include "data/subset.h"

namespace vitune::data {

namespace {

namespace fs = std::filesystem;

bool is_file(const std::string& path) {
  std::error_code error;
  return fs::is_regular_file(path, error);
}

std::vector<std::string> comma_list(const std::string& text) {
  std::vector<std::string> items;
  size_t begin = 0;
  for (;;) {
    const size_t end = text.find(',', begin);
    items.push_back(text.substr(begin, end - begin));
    if (end == std::string::npos) return items;
    begin = end + 1;
  }
}

// The first of `candidates` that exists; else an error listing them all.
std::string first_existing(const std::string& spec, const char* what,
                           const std::vector<std::string>& candidates) {
  for (const std::string& path : candidates) {
    if (is_file(path)) return path;
  }
  std::string tried;
  for (const std::string& path : candidates) tried += (tried.empty() ? "" : ", ") + path;
  throw Error(cat("dataset spec \"", spec, "\": no ", what, " file found (tried ", tried, ")"));
}

// The IDX images and labels files for "<folder>/<split>": <split>-images-idx3-ubyte and
// <split>-labels-idx1-ubyte, gzipped or not; the test split may also be called t10k.
std::pair<std::string, std::string> idx_files(const std::string& spec, const fs::path& folder,
                                              const std::string& split) {
  std::vector<std::string> prefixes = {split};
  if (split == "test") prefixes.push_back("t10k");
  std::vector<std::string> images, labels;
  for (const std::string& prefix : prefixes) {
    for (const char* suffix : {".gz", ""}) {
      images.push_back((folder / (prefix + "-images-idx3-ubyte" + suffix)).string());
      labels.push_back((folder / (prefix + "-labels-idx1-ubyte" + suffix)).string());
    }
  }
  return {first_existing(spec, "IDX images", images), first_existing(spec, "IDX labels", labels)};
}

std::shared_ptr<const Dataset> open_idx(const DatasetSpec& spec, const std::string& text) {
  if (spec.kind == "fashion-mnist") {
    const fs::path folder = spec.root.empty() ? fs::path(kFashionMnistFolder) : fs::path(spec.root);
    const auto [images, labels] = idx_files(text, folder, spec.location);
    return std::make_shared<IdxDataset>(images, labels, spec.num_classes);
  }
  const std::vector<std::string> files = comma_list(spec.location);
  if (files.size() == 2) return std::make_shared<IdxDataset>(files[0], files[1], spec.num_classes);
  if (files.size() != 1) {
    throw Error(cat("dataset spec \"", text, "\": expected idx:<folder>/<split> or ",
                    "idx:<images file>,<labels file>"));
  }
  const fs::path location(spec.location);
  const auto [images, labels] =
      idx_files(text, location.parent_path(), location.filename().string());
  return std::make_shared<IdxDataset>(images, labels, spec.num_classes);
}

std::shared_ptr<const Dataset> open_cifar(const DatasetSpec& spec, const std::string& text) {
  const bool hundred = spec.kind == "cifar100";
  const CifarVariant variant = hundred ? CifarVariant::Cifar100 : CifarVariant::Cifar10;
  if (spec.location.find(',') != std::string::npos || is_file(spec.location)) {
    return std::make_shared<CifarDataset>(variant, comma_list(spec.location), spec.num_classes);
  }
  const fs::path location(spec.location);
  const fs::path folder = location.parent_path();
  const std::string split = location.filename().string();
  std::vector<std::string> files;
  if (split == "train" && hundred) {
    files = {(folder / "train.bin").string()};
  } else if (split == "train") {
    for (int b = 1; b <= 5; ++b) files.push_back((folder / cat("data_batch_", b, ".bin")).string());
  } else if (split == "test") {
    files = {(folder / (hundred ? "test.bin" : "test_batch.bin")).string()};
  } else {
    throw Error(cat("dataset spec \"", text, "\": expected ", spec.kind,
                    ":<folder>/train, <folder>/test or batch files separated by commas"));
  }
  return std::make_shared<CifarDataset>(variant, files, spec.num_classes);
}

std::shared_ptr<const Dataset> open_vtab(const DatasetSpec& spec, const std::string& text) {
  const std::string list =
      first_existing(text, "VTAB list", {spec.location, spec.location + ".txt"});
  const std::string root = spec.root.empty() ? fs::path(list).parent_path().string() : spec.root;
  return std::make_shared<ImageFileDataset>(open_vtab_list(list, root, spec.num_classes));
}

std::shared_ptr<const Dataset> open_fgvc(const DatasetSpec& spec) {
  const std::string root =
      spec.root.empty() ? fs::path(spec.location).parent_path().string() : spec.root;
  return std::make_shared<ImageFileDataset>(open_fgvc_json(spec.location, root, spec.num_classes));
}

std::shared_ptr<const Dataset> open_base(const DatasetSpec& spec, const std::string& text) {
  if (spec.kind == "fashion-mnist" || spec.kind == "idx") return open_idx(spec, text);
  if (spec.kind == "cifar10" || spec.kind == "cifar100") return open_cifar(spec, text);
  if (spec.kind == "vtab") return open_vtab(spec, text);
  if (spec.kind == "fgvc") return open_fgvc(spec);
  VITUNE_CHECK(spec.num_classes <= 0, "dataset spec \"", text,
               "\": num_classes does not apply to folder (its classes are its subfolders)");
  return std::make_shared<ImageFileDataset>(open_image_folder(spec.location));
}

}  // namespace

std::shared_ptr<const Dataset> open_dataset(const DatasetSpec& spec) {
  const std::string text = spec.canonical();
  std::shared_ptr<const Dataset> dataset = open_base(spec, text);
  try {
    if (!spec.classes.empty()) dataset = class_subset(dataset, spec.classes);
    if (spec.stratified()) {
      StratifiedOptions options;
      options.per_class = spec.per_class;
      options.ratio = spec.ratio;
      options.part_begin = spec.part_begin;
      options.part_end = spec.part_end;
      options.seed = spec.seed;
      dataset = stratified_subset(dataset, options);
    }
    if (spec.limit >= 0) dataset = first_examples(dataset, spec.limit);
  } catch (const Error& error) {
    throw Error(cat("dataset spec \"", text, "\": ", error.what()));
  }
  return dataset;
}

std::shared_ptr<const Dataset> open_dataset(const std::string& spec) {
  return open_dataset(parse_dataset_spec(spec));
}

}  // namespace vitune::data
