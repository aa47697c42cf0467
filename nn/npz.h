// NumPy's .npz files: a zip archive of .npy arrays (stored by numpy.savez, deflated by
// numpy.savez_compressed), read into named tensors. The zip format is read in
// nn/zip_archive.h and each array in nn/npy.h.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace vitune::nn {

struct NpzFile {
  std::vector<std::string> names;       // in archive order, without the ".npy" suffix
  std::map<std::string, Tensor> arrays;  // owned copies, in the stored dtype
  std::string path;

  // The array called `name`; throws vitune::Error naming the file and array if absent.
  const Tensor& at(const std::string& name) const;
};

// Reads every array of the archive at `path`. Errors name the file and the entry.
NpzFile read_npz(const std::string& path);

}  // namespace vitune::nn
