// Opening an image folder: one subfolder per class, image files found recursively.
#include <algorithm>
#include <cctype>
#include <filesystem>

#include "data/image_file_dataset.h"

namespace vitune::data {

namespace {

namespace fs = std::filesystem;

bool is_image_file(const fs::path& path) {
  std::string extension = path.extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return extension == ".jpg" || extension == ".jpeg" || extension == ".png";
}

// The image files below `folder`, sorted by path.
std::vector<std::string> image_files_below(const fs::path& folder) {
  std::vector<std::string> files;
  std::error_code error;
  for (fs::recursive_directory_iterator
           it(folder, fs::directory_options::follow_directory_symlink, error),
       end;
       !error && it != end; it.increment(error)) {
    if (it->is_regular_file(error) && is_image_file(it->path())) {
      files.push_back(it->path().string());
    }
  }
  VITUNE_CHECK(!error, "image folder ", folder.string(), ": cannot list files (", error.message(),
               ")");
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

ImageFileDataset open_image_folder(const std::string& folder) {
  std::error_code error;
  VITUNE_CHECK(fs::is_directory(folder, error), "image folder ", folder,
               ": not a directory (expected one subfolder per class)");
  std::vector<fs::path> class_folders;
  for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
    if (it->is_directory(error)) class_folders.push_back(it->path());
  }
  VITUNE_CHECK(!error, "image folder ", folder, ": cannot list it (", error.message(), ")");
  VITUNE_CHECK(!class_folders.empty(), "image folder ", folder,
               ": no class subfolders (expected one subfolder per class)");
  std::sort(class_folders.begin(), class_folders.end());

  std::vector<std::string> paths;
  std::vector<int64_t> labels;
  for (size_t c = 0; c < class_folders.size(); ++c) {
    const std::vector<std::string> files = image_files_below(class_folders[c]);
    VITUNE_CHECK(!files.empty(), "image folder ", folder, ": class folder ",
                 class_folders[c].filename().string(), " has no .jpg, .jpeg or .png files");
    paths.insert(paths.end(), files.begin(), files.end());
    labels.insert(labels.end(), files.size(), int64_t(c));
  }
  return ImageFileDataset(std::move(paths), std::move(labels), int(class_folders.size()),
                          "image folder " + folder);
}

}  // namespace vitune::data
