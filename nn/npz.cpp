// Reading .npz archives: every NAME.npy entry of the zip archive parsed into the array
// NAME, in archive order.
#include "nn/npz.h"

#include "engine/error.h"
#include "nn/npy.h"
#include "nn/zip_archive.h"

namespace vitune::nn {

const Tensor& NpzFile::at(const std::string& name) const {
  auto found = arrays.find(name);
  if (found == arrays.end()) throw Error(cat("npz file '", path, "' has no array named '", name, "'"));
  return found->second;
}

NpzFile read_npz(const std::string& path) {
  ZipArchive zip(path, "npz file");
  NpzFile npz;
  npz.path = path;
  for (const ZipEntry& entry : zip.entries()) {
    const std::string suffix = ".npy";
    if (entry.name.size() <= suffix.size() ||
        entry.name.compare(entry.name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      zip.fail_entry(entry, "not a .npy array (an npz archive holds only NAME.npy entries)");
    }
    std::string name = entry.name.substr(0, entry.name.size() - suffix.size());
    if (npz.arrays.count(name)) zip.fail_entry(entry, "the archive holds this entry twice");
    std::string inflated;
    ZipBytes bytes = zip.read(entry, inflated);
    const std::string what = cat("npz file '", path, "', entry '", entry.name, "'");
    npz.arrays.emplace(name, parse_npy(bytes.data, bytes.size, what));
    npz.names.push_back(name);
  }
  return npz;
}

}  // namespace vitune::nn
