// For fuzz targets whose parser takes a path: the input bytes written to a file in a
// private temporary folder made once per process (and removed at exit).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace vitune::fuzz {

// The private folder, created on first use.
inline const std::string& temp_folder() {
  struct Folder {
    std::string path;
    Folder() {
      std::string pattern = (std::filesystem::temp_directory_path() / "vitune-fuzz-XXXXXX").string();
      if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create a temporary folder");
      path = pattern;
    }
    ~Folder() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static Folder folder;
  return folder.path;
}

// Writes `size` bytes to temp_folder()/name and returns the file's path.
inline std::string write_temp_file(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = temp_folder() + "/" + name;
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) throw std::runtime_error("cannot create " + path);
  const bool written = size == 0 || std::fwrite(data, 1, size, file) == size;
  if (std::fclose(file) != 0 || !written) throw std::runtime_error("cannot write " + path);
  return path;
}

}  // namespace vitune::fuzz
