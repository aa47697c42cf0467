// Where a tensor's bytes live: host memory or one CUDA device.
#pragma once

#include <string>

namespace vitune {

enum class DeviceType { CPU, CUDA };

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;

  static Device cpu() { return {DeviceType::CPU, 0}; }
  static Device cuda(int index = 0) { return {DeviceType::CUDA, index}; }
  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  bool operator==(const Device& other) const { return type == other.type && index == other.index; }
  bool operator!=(const Device& other) const { return !(*this == other); }
  std::string str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }
};

// Parses "cpu", "cuda" or "cuda:N"; throws vitune::Error naming `what` otherwise.
Device parse_device(const std::string& text, const std::string& what = "--device");

}  // namespace vitune
