// A dataset of image files on disk with labels known up front: the common form of image
// folders, VTAB-1k list files and FGVC json splits. Images are decoded in load(), so
// opening is cheap and memory holds only the paths.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace vitune::data {

class ImageFileDataset : public Dataset {
 public:
  // paths[i] has label labels[i]. num_classes <= 0: the largest label + 1; otherwise
  // every label must be below it. `source` (the folder or list file) names the
  // dataset in errors.
  ImageFileDataset(std::vector<std::string> paths, std::vector<int64_t> labels, int num_classes,
                   const std::string& source);

  int64_t size() const override { return int64_t(paths_.size()); }
  int num_classes() const override { return num_classes_; }
  int64_t label(int64_t i) const override;
  Image load(int64_t i) const override;
  std::string describe(int64_t i) const override;

 private:
  std::vector<std::string> paths_;
  std::vector<int64_t> labels_;
  int num_classes_ = 0;
};

// Opens a folder with one subfolder per class: classes are the subfolders sorted by
// name, examples the .jpg, .jpeg and .png files (any case) below each, sorted by path.
ImageFileDataset open_image_folder(const std::string& folder);

// Opens a VTAB-1k list file: one "<path relative to root> <label>" per line, blank lines
// ignored. Errors name the list file and line: a missing label, a label that is not a
// non-negative integer (or not below num_classes when given), a file that does not exist.
ImageFileDataset open_vtab_list(const std::string& list_file, const std::string& root,
                                int num_classes = 0);

// Opens an FGVC json split: an object mapping "<path relative to root>" to an integer
// class. Examples are in key order. Errors name the json file and the key.
ImageFileDataset open_fgvc_json(const std::string& json_file, const std::string& root,
                                int num_classes = 0);

}  // namespace vitune::data
