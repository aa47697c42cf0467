// NumPy's array files: .npy (one array: magic, a Python-dict header, raw bytes) and
// .npz (a zip archive of .npy files, stored by numpy.savez or deflated by
// numpy.savez_compressed), read by our own zip reader with CRC and size checks.
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

// Parses one .npy file held in `bytes` into an owned tensor. Little-endian (or
// byte-order-free) f4, f8, i4, i8, u1 and f2 arrays in C order are supported;
// `what` names the array in error messages.
Tensor parse_npy(const std::string& bytes, const std::string& what);

}  // namespace vitune::nn
