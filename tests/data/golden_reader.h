// Reads the committed safetensors golden files of the data tests (f32 and i64 tensors
// only): an 8-byte little-endian header length, a JSON header, the tensor bytes.
#pragma once

#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "engine/tensor.h"

namespace vitune::data::testing {

inline std::map<std::string, Tensor> read_golden(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t header_length = 0;
  std::memcpy(&header_length, bytes.data(), 8);
  const nlohmann::json header = nlohmann::json::parse(bytes.substr(8, header_length));
  const char* data = bytes.data() + 8 + header_length;
  std::map<std::string, Tensor> tensors;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    const std::string dtype = entry.at("dtype");
    Tensor tensor(entry.at("shape").get<Shape>(), dtype == "F32" ? DType::F32 : DType::I64, Device::cpu());
    if (dtype != "F32" && dtype != "I64") throw std::runtime_error(path + ": dtype " + dtype);
    const size_t begin = entry.at("data_offsets")[0];
    std::memcpy(tensor.raw(), data + begin, tensor.nbytes());
    tensors.emplace(name, tensor);
  }
  return tensors;
}

}  // namespace vitune::data::testing
