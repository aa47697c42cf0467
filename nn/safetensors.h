// The safetensors checkpoint format: an 8-byte little-endian header length N, N bytes
// of JSON naming each tensor's dtype, shape and byte range, then the tensor bytes.
// Reading maps the file into memory and validates it as strictly as the reference
// implementation; writing pads the header to 8 bytes and replaces the file atomically.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/tensor.h"

namespace vitune::nn {

struct SafetensorsFile {
  std::vector<std::string> names;               // in file (data offset) order
  std::map<std::string, Tensor> tensors;        // stored dtype, shape as in the file
  std::map<std::string, std::string> metadata;  // the __metadata__ object
  std::string path;

  // The tensor called `name`; throws vitune::Error naming the file and tensor if absent.
  const Tensor& at(const std::string& name) const;
};

// Reads and validates `path`. The tensors are views into a private (copy-on-write)
// memory mapping of the file that lives as long as any of them does; a tensor whose
// bytes are not aligned to its element size in the file is copied instead.
SafetensorsFile read_safetensors(const std::string& path);

// Writes the tensors in the given order. Names must be unique, non-empty and not
// "__metadata__"; tensors may be on any device: each is copied to the host as it is
// written.
void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace vitune::nn
